"""Forecourt."""
