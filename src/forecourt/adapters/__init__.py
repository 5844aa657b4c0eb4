"""Forecourt adapters."""
