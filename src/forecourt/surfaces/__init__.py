"""Forecourt surfaces."""
