"""Persistence: repository protocols (``base``) and the SQL store (SQLite or PostgreSQL).

Typical wiring::

    from forecourt.store import open_store, upgrade_async

    await upgrade_async(settings.database_url)   # or upgrade(url) from synchronous code
    store = open_store(settings)
    async with store.transaction() as uow:
        page = await uow.inventory.search(query)
    await store.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from forecourt.store.sql.engine import create_engine
from forecourt.store.sql.migrate import upgrade, upgrade_async, upgrade_engine
from forecourt.store.sql.sqlite_vec import register_auto_extension as register_sqlite_vec
from forecourt.store.sql.store import SqlStore

if TYPE_CHECKING:
    from forecourt.settings import Settings

__all__ = [
    "SqlStore",
    "create_engine",
    "open_store",
    "open_store_url",
    "register_sqlite_vec",
    "upgrade",
    "upgrade_async",
    "upgrade_engine",
]


def open_store(settings: Settings) -> SqlStore:
    """A :class:`SqlStore` on ``settings.database_url`` (pool size and echo from settings).

    Migrations are not run here; call :func:`upgrade` or :func:`upgrade_async` first.
    """
    return SqlStore(create_engine(settings.database_url, pool_size=settings.db_pool_size, echo=settings.db_echo))


def open_store_url(database_url: str) -> SqlStore:
    """A :class:`SqlStore` on a database URL with default engine settings."""
    return SqlStore(create_engine(database_url))
