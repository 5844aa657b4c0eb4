"""Alembic migrations for the SQL store, shipped inside the package (run them with ``forecourt.store.upgrade``)."""
