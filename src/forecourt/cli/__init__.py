"""Forecourt cli."""
