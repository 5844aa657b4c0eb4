"""Forecourt store.sql."""
