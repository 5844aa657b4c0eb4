"""What the repositories of one unit of work share: the connection, the dialect and the outbox writer."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.dialects import sqlite

from forecourt import caching
from forecourt.domain.events import ChangeEvent, ChangeType, ResourceType
from forecourt.store.sa_asyncio import AsyncConnection
from forecourt.store.sa_postgresql import postgresql
from forecourt.store.sql.inline import InlineConnection
from forecourt.store.sql.tables import UtcDateTime, outbox

# Serialises outbox writers on PostgreSQL so that ``seq`` order is commit order (see ``lock_outbox``).
_OUTBOX_LOCK_KEY = 0x466F7265636F7572


ROWS_PER_STATEMENT = 1_000


def _bind_processor(dialect: sa.Dialect, type_: sa.types.TypeEngine[Any]) -> Callable[[Any], Any] | None:
    return type_.dialect_impl(dialect).bind_processor(dialect)


def _memoised(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``process`` remembering its answers for one batch (a batch repeats the same few instants)."""
    done: dict[Any, Any] = {}

    def memoised(value: Any) -> Any:
        if value not in done:
            done[value] = process(value)
        return done[value]

    return memoised


@dataclass(frozen=True)
class _Compiled:
    """An INSERT/UPDATE compiled for one dialect and one set of columns: its SQL and each column's processor."""

    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    timestamps: tuple[bool, ...]

    def pairs(self) -> list[tuple[str, Callable[[Any], Any] | None]]:
        """Each column with the processor for this batch (a timestamp's memoised afresh)."""
        return [
            (name, _memoised(process) if process is not None and ts else process)
            for name, process, ts in zip(self.names, self.processors, self.timestamps, strict=True)
        ]


def _compile(stmt: sa.Insert | sa.Update, dialect: sa.Dialect, keys: list[str]) -> _Compiled:
    compiled = stmt.compile(dialect=dialect, column_keys=keys)
    names = tuple(compiled.positiontup or ())
    types = [compiled.binds[name].type for name in names]
    return _Compiled(
        compiled.string,
        names,
        tuple(_bind_processor(dialect, t) for t in types),
        tuple(isinstance(t, UtcDateTime) for t in types),
    )


# INSERT ... ON CONFLICT DO NOTHING per engine's dialect, table and columns: the audit writer's batches skip the
# compiler. The key holds the dialect itself (compared by identity), so the entry is used only for that dialect.
_IGNORING_INSERTS: caching.Cache[tuple[sa.Dialect, sa.Table, tuple[str, ...]], _Compiled] = caching.lru(
    "store.ignoring_inserts", 256
)


def new_id() -> str:
    """A fresh opaque identifier (uuid4 hex)."""
    return uuid.uuid4().hex


class TxContext:
    """One open transaction: the connection every repository of the unit of work uses."""

    def __init__(self, conn: AsyncConnection | InlineConnection) -> None:
        self.conn = conn
        self.is_postgres = conn.dialect.name == "postgresql"
        self._outbox_locked = False

    async def lock_outbox(self) -> None:
        """Make this transaction the only outbox writer until it ends (PostgreSQL only).

        A sequence hands out numbers at insert time, not commit time, so two concurrent writers could
        commit out of ``seq`` order and a reader polling ``seq > n`` would skip an event for good.
        Holding a transaction-scoped advisory lock from before the first row change until commit keeps
        ``seq`` in commit order. Taking it before touching rows avoids lock-order deadlocks. SQLite needs
        nothing: its ``BEGIN IMMEDIATE`` transactions already have a single writer.
        """
        if self._outbox_locked or not self.is_postgres:
            return
        await self.conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_OUTBOX_LOCK_KEY)))
        self._outbox_locked = True

    async def append_event(self, event: ChangeEvent) -> None:
        """Write ``event`` to the outbox in this transaction (its ``seq`` is assigned by the database)."""
        await self.lock_outbox()
        await self.conn.execute(sa.insert(outbox).values(**_event_row(event)))

    async def emit(
        self,
        dealership_id: str,
        resource_type: ResourceType,
        resource_id: str,
        change_type: ChangeType,
        occurred_at: datetime,
        *,
        status: str | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> None:
        """Build a :class:`ChangeEvent` for a change and append it to the outbox."""
        await self.append_event(
            ChangeEvent(
                id=new_id(),
                dealership_id=dealership_id,
                resource_type=resource_type,
                resource_id=resource_id,
                change_type=change_type,
                status=status,
                occurred_at=occurred_at,
                payload=dict(payload or {}),
            )
        )

    async def emit_many(self, events: Sequence[ChangeEvent]) -> None:
        """Append several events at once (one round trip)."""
        if not events:
            return
        await self.lock_outbox()
        await self.conn.execute(sa.insert(outbox), [_event_row(e) for e in events])

    async def insert_ignore(self, table: sa.Table, values: Mapping[str, Any]) -> bool:
        """Insert one row unless it collides with a unique key; True when inserted.

        ``ON CONFLICT DO NOTHING`` keeps the transaction usable on PostgreSQL, where a failed insert
        would abort it.
        """
        dialect_insert = postgresql.insert if self.is_postgres else sqlite.insert
        stmt = dialect_insert(table).values(**values).on_conflict_do_nothing()
        result = await self.conn.execute(stmt)
        return bool(result.rowcount)

    async def insert_many_ignore(self, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert rows in one round trip, skipping those that collide with a unique key."""
        if not rows:
            return
        conn = self.conn
        dialect_insert = postgresql.insert if self.is_postgres else sqlite.insert
        if not isinstance(conn, AsyncConnection):
            await self.execute_many(dialect_insert(table).on_conflict_do_nothing(), rows)
            return
        keys = tuple(rows[0])
        key = (conn.dialect, table, keys)
        compiled = _IGNORING_INSERTS.get(key)
        if compiled is None:
            compiled = _compile(dialect_insert(table).on_conflict_do_nothing(), conn.dialect, list(keys))
            _IGNORING_INSERTS.put(key, compiled)
        await self._execute_compiled(conn, compiled, rows)

    async def execute_many(self, stmt: sa.Insert | sa.Update, rows: Sequence[Mapping[str, Any]]) -> None:
        """``stmt`` once per row as driver tuples: the column types' bind processing without SQLAlchemy's per-row work.

        SQLAlchemy's own executemany builds and processes a parameter dictionary per row and per column, most
        of a batch's write time on SQLite (an inventory import, the audit writer's batches). The same processors
        run here column by column instead, and a timestamp column's are memoised (a batch repeats the same few
        instants), so the stored values are exactly those SQLAlchemy would write.
        """
        if not rows:
            return
        conn = self.conn
        if not isinstance(conn, AsyncConnection):  # the inline read connection never writes
            for start in range(0, len(rows), ROWS_PER_STATEMENT):
                await conn.execute(stmt, [dict(r) for r in rows[start : start + ROWS_PER_STATEMENT]])
            return
        await self._execute_compiled(conn, _compile(stmt, conn.dialect, list(rows[0])), rows)

    @staticmethod
    async def _execute_compiled(conn: AsyncConnection, compiled: _Compiled, rows: Sequence[Mapping[str, Any]]) -> None:
        pairs = compiled.pairs()
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            params = [
                tuple([row[name] if process is None else process(row[name]) for name, process in pairs])
                for row in rows[start : start + ROWS_PER_STATEMENT]
            ]
            await conn.exec_driver_sql(compiled.sql, params)

    async def upsert(self, table: sa.Table, values: Mapping[str, Any], keys: Sequence[str]) -> None:
        """Insert a row, or overwrite the row with the same ``keys``."""
        dialect_insert = postgresql.insert if self.is_postgres else sqlite.insert
        stmt = dialect_insert(table).values(**values)
        changes = {k: stmt.excluded[k] for k in values if k not in keys}
        await self.conn.execute(stmt.on_conflict_do_update(index_elements=list(keys), set_=changes))

    async def update_where(
        self, table: sa.Table, where: Iterable[sa.ColumnElement[bool]], values: Mapping[str, Any]
    ) -> int:
        """``UPDATE table SET values WHERE all(where)``; returns the number of rows changed."""
        result = await self.conn.execute(sa.update(table).where(*where).values(**values))
        return int(result.rowcount)


def _event_row(event: ChangeEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "dealership_id": event.dealership_id,
        "resource_type": event.resource_type.value,
        "resource_id": event.resource_id,
        "change_type": event.change_type.value,
        "status": event.status,
        "occurred_at": event.occurred_at,
        "payload": event.payload,
    }


def dump(model: BaseModel, json_fields: Iterable[str] = (), exclude: Iterable[str] = ()) -> dict[str, Any]:
    """A row from a domain model: JSON fields in JSON mode, enums as their values, the rest as is."""
    json_set = set(json_fields)
    excluded = set(exclude)
    # Attribute access, not model_dump: the domain's timestamp serializer would turn datetimes into text.
    names = [n for n in type(model).model_fields if n not in excluded and n not in json_set]
    row = {n: _plain(getattr(model, n)) for n in names}
    if json_set:
        row.update(model.model_dump(mode="json", include=json_set))
    return row


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def row_dict(row: sa.Row[Any], exclude: Iterable[str] = ()) -> dict[str, Any]:
    """A result row as a plain dict, without the named columns."""
    excluded = set(exclude)
    return {k: v for k, v in row._mapping.items() if k not in excluded}
