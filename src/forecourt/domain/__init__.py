"""Pure domain types: no I/O, no frameworks beyond pydantic."""
