"""SQLAlchemy's PostgreSQL dialect package, with only the column types the tables name loaded up front.

The tables declare ``JSONB`` and ``ARRAY`` variants for PostgreSQL (``sa.JSON().with_variant(postgresql.JSONB(),
"postgresql")``), so every command imported the whole dialect and its drivers' modules (~50 ms of CPU, ~5 % of a
one-shot command) even on SQLite, where neither is used. The two types' modules are loaded alone (see
:mod:`.sa_partial`); anything else read from the package (``postgresql.insert`` on PostgreSQL, the engine's
dialect lookup) finishes loading it. The store imports ``postgresql`` from here.
"""

from __future__ import annotations

from forecourt.store.sa_partial import load_in_part

load_in_part("sqlalchemy.dialects.postgresql", ("json", "array"), {"JSONB": "json", "ARRAY": "array"})

from sqlalchemy.dialects import postgresql  # noqa: E402 - after the package is set up without its __init__

__all__ = ["postgresql"]
