"""Async engines for SQLite (embedded) and PostgreSQL (scale-out), configured for the store's needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from forecourt.store.sa_asyncio import AsyncEngine, create_async_engine

SQLITE_BUSY_TIMEOUT_MS = 5000
SQLITE_MMAP_BYTES = 1 << 30
SQLITE_CACHE_KIB = 32_768


def is_sqlite_url(database_url: str) -> bool:
    """Whether ``database_url`` names an SQLite database."""
    return make_url(database_url).get_backend_name() == "sqlite"


def sqlite_file_path(database_url: str) -> str | None:
    """The file of an SQLite URL; ``None`` for in-memory and ``file:`` URI databases."""
    database = make_url(database_url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


READ_ONLY_KEY = "forecourt_read_only"


def json_loads(text: str | bytes) -> Any:
    """JSON columns read back with orjson; the standard library for what orjson refuses (lone surrogates)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


POOL_RECYCLE_S = 1800
"""Seconds a PostgreSQL connection is used before the pool opens a new one."""


def create_engine(database_url: str, *, pool_size: int = 10, echo: bool = False) -> AsyncEngine:
    """An async engine for ``sqlite+aiosqlite:///path`` or ``postgresql+asyncpg://...``.

    SQLite files get WAL journaling, foreign keys, a busy timeout and ``BEGIN IMMEDIATE`` transactions
    (so a read-then-write transaction never fails on a stale snapshot); the file's folder is created.

    Args:
        database_url: An async SQLAlchemy URL.
        pool_size: Connections kept open (PostgreSQL).
        echo: Log every statement (development only; statements may carry PII).

    Returns:
        The engine; dispose of it when done.
    """
    if is_sqlite_url(database_url):
        return _sqlite_engine(database_url, echo=echo)
    # No pre-ping: it cost a round trip (SELECT 1) on every checkout, about a third of a read unit's CPU (0.35 of
    # 1.1 ms here). A connection PostgreSQL dropped fails its next statement instead; that is a retryable 503
    # (gateway/store_faults.py), and SQLAlchemy then invalidates the whole pool, so one call per worker sees it.
    # Connections are renewed every half hour, before any idle timeout of a proxy in between.
    return create_async_engine(
        database_url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_recycle=POOL_RECYCLE_S,
        echo=echo,
        json_deserializer=json_loads,
    )


def _sqlite_engine(database_url: str, *, echo: bool) -> AsyncEngine:
    path = sqlite_file_path(database_url)
    kwargs: dict[str, Any] = {"echo": echo, "json_deserializer": json_loads}
    if path is None:
        kwargs["poolclass"] = StaticPool
    else:
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(database_url, **kwargs)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the driver so that "begin" below decides how to start one.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            if path is not None:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
                # Memory-mapped reads and a larger page cache keep searches off the read() syscall path.
                cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
                cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        finally:
            cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        # Writers take the write lock up front (no read-to-write upgrade failures); readers start a
        # deferred transaction so they never queue behind writers in WAL mode.
        read_only = conn.info.get(READ_ONLY_KEY, False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine
