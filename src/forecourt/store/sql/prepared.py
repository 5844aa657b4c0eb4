"""The hottest reads straight on the driver: a repeated statement's SQL compiled once, run without SQLAlchemy.

SQLAlchemy executing a cached statement still builds an execution context, processes the parameters,
wraps the cursor and sets up a result for every call: about 50 µs of CPU per statement, more than SQLite
needs for an index-backed page of a dealership's vehicles. For a read that repeats (an agent paging, the same
search asked again), :class:`PreparedReads` keeps the statement's driver form — its SQL with every expanding
parameter rendered and its positional parameters already processed by the bind types — and runs it on
the unit of work's own DBAPI connection (same transaction, same snapshot).

The SQL is compiled from the repository's own SQLAlchemy statement (``store/sql/search.py`` stays the one
home of the filter rules); only what the driver is handed changes. A read seen once goes SQLAlchemy's
way (its structural statement cache suits queries that never repeat); from its second sighting on it is
prepared, and at most ``size`` are kept, the least recently used dropped first. Only positional-parameter dialects
(SQLite's ``qmark``) are prepared; the driver's errors are raised as SQLAlchemy's, as its own path would.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement

from forecourt import caching

PREPARED_SIZE = 256


@dataclass(frozen=True, slots=True)
class DriverStatement:
    """A statement as its driver takes it: SQL text and positional parameters, bind processing done."""

    sql: str
    parameters: tuple[Any, ...]


def driver_statement(statement: ClauseElement, dialect: sa.Dialect) -> DriverStatement | None:
    """``statement`` compiled for ``dialect`` with its own parameter values; ``None`` for a named-parameter dialect."""
    compiled = statement.compile(dialect=dialect)
    if not isinstance(compiled, SQLCompiler) or not compiled.positional:
        return None
    state = compiled.construct_expanded_state()  # expanding ("IN") parameters rendered, as at execution
    processors: dict[str, Callable[[Any], Any]] = dict(state.processors)
    binds = getattr(compiled, "binds", {})
    values: list[Any] = []
    for name, value in zip(state.positiontup or (), state.positional_parameters, strict=True):
        process = processors.get(name)
        if process is None and name in binds:
            found = binds[name].type.dialect_impl(dialect).bind_processor(dialect)
            if found is not None:
                process = processors[name] = found
        values.append(process(value) if process is not None and value is not None else value)
    return DriverStatement(state.statement, tuple(values))


class PreparedReads:
    """Driver statements of reads asked for more than once, by a hashable key of the read (e.g. its query)."""

    def __init__(self, size: int = PREPARED_SIZE, *, name: str = "store.prepared_reads") -> None:
        self._prepared: caching.Cache[Hashable, tuple[sa.Dialect, tuple[DriverStatement, ...]]] = caching.lru(
            name, size
        )
        self._seen: caching.Cache[Hashable, bool] = caching.lru(f"{name}.seen", 4 * size)

    def get(
        self, key: Hashable, dialect: sa.Dialect, statements: Callable[[], Sequence[ClauseElement]]
    ) -> tuple[DriverStatement, ...] | None:
        """The driver statements of ``key`` for ``dialect``, prepared on its second sighting; ``None`` until then."""
        try:
            entry = self._prepared.get(key)
        except TypeError:  # an unhashable key (a query built without validation): never prepared
            return None
        if entry is not None and entry[0] is dialect:
            return entry[1]
        if self._seen.pop(key) is None:
            self._seen.put(key, True)
            return None
        prepared = [driver_statement(s, dialect) for s in statements()]
        if any(p is None for p in prepared):
            return None
        kept = tuple(p for p in prepared if p is not None)
        self._prepared.put(key, (dialect, kept))
        return kept

    def __len__(self) -> int:
        return len(self._prepared)


def run_on_driver(dbapi_connection: Any, dialect: sa.Dialect, statement: DriverStatement) -> list[Any]:
    """All rows of ``statement`` on ``dbapi_connection``; a driver error is raised as SQLAlchemy's own."""
    try:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(statement.sql, statement.parameters)
            return list(cursor.fetchall())
        finally:
            cursor.close()
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            statement.sql, statement.parameters, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc
