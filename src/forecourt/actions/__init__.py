"""Forecourt actions."""
