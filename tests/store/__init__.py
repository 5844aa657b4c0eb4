"""Contract tests for the SQL store, run on SQLite and PostgreSQL."""
