"""Packaged knowledge: demo dealer documents (``docs/``) ingested for the demo dealerships."""
