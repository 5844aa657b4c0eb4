"""SQLite reads on the calling thread: one synchronous connection per read unit of work, no driver hand-overs.

``aiosqlite`` runs every driver call (cursor, execute, fetch, close, BEGIN, COMMIT, the pool's reset)
on a thread of its own and hands the result back to the event loop: about a dozen thread hand-overs
for one inventory search, each a queue put, a loop wake-up and a GIL hand-off. For the small,
index-backed reads a dealership's store serves (well under a millisecond of SQLite work each), that
bookkeeping costs more CPU than the query itself. Read units of work on an SQLite file therefore run
their statements synchronously on the loop's thread, on a connection of their own:

- WAL mode lets readers proceed while a writer holds the write lock, so a read never waits for the
  writers (the async engine keeps serving writes on its driver thread, with ``BEGIN IMMEDIATE``);
- each read unit of work is one deferred transaction (one snapshot for the page and its count), begun and
  ended straight on the driver: :class:`InlineReads` keeps its connections checked out of the read engine
  for good, so a read costs neither a pool checkout nor SQLAlchemy's transaction bookkeeping (a statement
  that does go through SQLAlchemy joins the open transaction: the ``begin`` hook sees it is already open);
- the pool never blocks (``max_overflow=-1``): a read unit of work that is open across an ``await``
  takes another connection instead of waiting for one only this thread could release;
- a short busy timeout bounds the rare case where SQLite makes a reader wait (WAL recovery).

PostgreSQL (asyncpg) and in-memory SQLite keep the async engine for reads.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import CursorResult

from forecourt.store.sa_asyncio import AsyncEngine
from forecourt.store.sql.engine import SQLITE_CACHE_KIB, SQLITE_MMAP_BYTES, json_loads, sqlite_file_path
from forecourt.store.sql.prepared import DriverStatement, run_on_driver

READ_BUSY_TIMEOUT_MS = 250
READ_POOL_SIZE = 8


class InlineConnection:
    """The part of :class:`~sqlalchemy.ext.asyncio.AsyncConnection` the repositories use, run synchronously."""

    __slots__ = ("dbapi_connection", "dialect", "sync_connection")

    def __init__(self, sync_connection: sa.Connection, dbapi_connection: Any = None) -> None:
        self.sync_connection = sync_connection
        self.dialect = sync_connection.dialect
        self.dbapi_connection = (
            dbapi_connection if dbapi_connection is not None else sync_connection.connection.dbapi_connection
        )

    @property
    def info(self) -> dict[Any, Any]:
        """The connection's ``info`` dictionary."""
        return self.sync_connection.info

    async def execute(self, statement: Any, parameters: Any = None) -> CursorResult[Any]:
        """Run ``statement`` now and return its (fully fetched) result."""
        return self.sync_connection.execute(statement, parameters)

    async def scalar(self, statement: Any, parameters: Any = None) -> Any:
        """The first column of the first row of ``statement``'s result."""
        return self.sync_connection.scalar(statement, parameters)

    def driver_rows(self, statement: DriverStatement) -> list[Any]:
        """The driver's rows of a prepared statement, in this unit of work's transaction (see :mod:`.prepared`)."""
        return run_on_driver(self.dbapi_connection, self.dialect, statement)


class InlineReads:
    """Read connections of an inline read engine, each a SQLAlchemy connection kept checked out for good.

    :meth:`begin` hands one out with a deferred transaction begun on the driver; :meth:`end` commits (or
    rolls back) that transaction, through SQLAlchemy when a statement made SQLAlchemy start its own view of
    it, else on the driver, and keeps the connection for the next read. The list is touched only by
    ``pop``/``append`` (atomic), and a connection is used by one unit of work at a time; when none is idle a
    new one is opened (reads never wait for each other), and at most ``keep`` are kept.
    """

    def __init__(self, engine: sa.Engine, keep: int = READ_POOL_SIZE) -> None:
        self.engine = engine
        self._keep = keep
        self._idle: list[tuple[sa.Connection, Any]] = []

    def begin(self) -> tuple[sa.Connection, Any]:
        """A connection and its driver connection, in a new deferred transaction."""
        try:
            conn, dbapi = self._idle.pop()
        except IndexError:
            conn = self.engine.connect()
            dbapi = conn.connection.dbapi_connection
        try:
            dbapi.execute("BEGIN")
        except BaseException:
            self._discard(conn)
            raise
        return conn, dbapi

    def end(self, conn: sa.Connection, dbapi: Any, *, commit: bool) -> None:
        """End the transaction :meth:`begin` started and keep ``conn`` for another read."""
        try:
            if conn.in_transaction():
                if commit:
                    conn.commit()
                else:
                    conn.rollback()
            elif dbapi.in_transaction:
                dbapi.execute("COMMIT" if commit else "ROLLBACK")
        except BaseException:
            self._discard(conn)
            raise
        if conn.invalidated or len(self._idle) >= self._keep:
            conn.close()
        else:
            self._idle.append((conn, dbapi))

    def _discard(self, conn: sa.Connection) -> None:
        try:
            conn.invalidate()
        finally:
            conn.close()

    def dispose(self) -> None:
        """Close the kept connections and the engine's pool."""
        while self._idle:
            conn, _ = self._idle.pop()
            conn.close()
        self.engine.dispose()


def inline_read_engine(engine: AsyncEngine) -> sa.Engine | None:
    """A synchronous read engine on the same SQLite file as ``engine``; ``None`` when reads must stay async."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or sqlite_file_path(url.render_as_string(hide_password=False)) is None:
        return None
    read_engine = sa.create_engine(
        url.set(drivername="sqlite+pysqlite"),
        connect_args={"check_same_thread": False},
        poolclass=sa.QueuePool,
        pool_size=READ_POOL_SIZE,
        max_overflow=-1,
        echo=engine.echo,
        json_deserializer=json_loads,
    )

    @event.listens_for(read_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # "begin" below starts the transaction
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
            cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
            cursor.execute("PRAGMA query_only=ON")
            cursor.execute(f"PRAGMA busy_timeout={READ_BUSY_TIMEOUT_MS}")
        finally:
            cursor.close()

    @event.listens_for(read_engine, "begin")
    def _on_begin(conn: Any) -> None:
        # Deferred: a read snapshot, never the write lock. Straight to the driver: nothing of SQLAlchemy's
        # statement machinery is needed for BEGIN. A unit of work from InlineReads has begun it already.
        dbapi = conn.connection.dbapi_connection
        if not dbapi.in_transaction:
            dbapi.execute("BEGIN")

    return read_engine
