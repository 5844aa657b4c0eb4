"""Forecourt store."""
