"""SQLAlchemy's asyncio engine, loaded without the asyncio ORM session the same package holds.

Importing ``sqlalchemy.ext.asyncio`` imports its ``AsyncSession`` and with it SQLAlchemy's whole ORM: ~60 ms of
CPU, about 7 % of a one-shot command, for code Forecourt never runs (the store runs Core statements on
``AsyncEngine`` and ``AsyncConnection``). The package's ``engine`` module is loaded alone (with the ``base``,
``result`` and ``exc`` modules it imports; see :mod:`.sa_partial`); the A2A SDK's ``AsyncSession`` still comes
from the package, which then finishes loading. The store imports the engine's names from here.
"""

from __future__ import annotations

from forecourt.store.sa_partial import finished, load_in_part

load_in_part("sqlalchemy.ext.asyncio", ("engine",))

from sqlalchemy.ext.asyncio.engine import (  # noqa: E402 - after the package is set up without its __init__
    AsyncConnection,
    AsyncEngine,
    AsyncTransaction,
    create_async_engine,
)

__all__ = ["AsyncConnection", "AsyncEngine", "AsyncTransaction", "create_async_engine", "finished"]
