"""Forecourt gateway."""
