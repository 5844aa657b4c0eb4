"""Objects from a read's driver rows, each distinct row built once per process while it is read.

A search's CPU was mostly SQLAlchemy's per-row type processing and building each domain object again, for
rows that rarely change between searches. The driver's own row (a tuple of plain values: it holds every
selected column, so equal rows make equal objects) keys the objects built; a row seen before is answered
with that same frozen object, a new or changed row is processed with the column types' result processors
(SQLAlchemy's public ``result_processor``) and built by the repository's builder.

A row is kept from its second sighting on (a doorkeeper remembers the hashes of rows seen once), so a
workload that never repeats a row (a million vehicles searched at random) keeps nothing and pays one hash
per row; at most ``size`` objects are kept, the least recently used dropped first (``forecourt.caching`` caches named
``store.driver_rows.*``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import orjson
import sqlalchemy as sa

from forecourt import caching

ROW_MEMO_SIZE = 2048

T = TypeVar("T")


class DriverRows(Generic[T]):
    """The objects of driver rows selecting ``columns``, built by ``build`` from a row's processed values."""

    def __init__(
        self,
        columns: Sequence[sa.ColumnElement[Any]],
        build: Callable[[list[Any]], T],
        size: int = ROW_MEMO_SIZE,
        *,
        name: str = "store.driver_rows",
    ) -> None:
        self._columns = list(columns)
        self._make = build
        self._built: caching.Cache[int, tuple[tuple[Any, ...], T]] = caching.lru(name, size)  # by the row's hash
        self._seen: caching.Cache[int, bool] = caching.lru(f"{name}.seen", 4 * size)  # hashes of rows seen once
        self._processors: caching.HeldMemo[sa.Dialect, list[Any]] = caching.HeldMemo(
            f"{name}.processors", 8, self._processors_of
        )

    def from_result(self, result: sa.CursorResult[Any], dialect: sa.Dialect) -> list[T]:
        """The objects of ``result`` (a statement selecting the columns), which it consumes and closes."""
        try:
            raw = result.cursor.fetchall() if result.cursor is not None else []
        finally:
            result.close()
        return self.from_rows(raw, dialect)

    def from_rows(self, raw: Sequence[Sequence[Any]], dialect: sa.Dialect) -> list[T]:
        """The objects of driver rows selecting the columns."""
        built, seen = self._built, self._seen
        out: list[T] = []
        for row in raw:
            key = row if type(row) is tuple else tuple(row)
            try:
                h = hash(key)
            except TypeError:  # a driver that decodes JSON columns hands over lists
                key = _hashable(key)
                h = hash(key)
            entry = built.get(h)
            if entry is not None and entry[0] == key:
                out.append(entry[1])
                continue
            made = self._build(row, dialect)
            if seen.pop(h) is not None:
                built.put(h, (key, made))
            else:
                seen.put(h, True)
            out.append(made)
        return out

    def _processors_of(self, dialect: sa.Dialect) -> list[Any]:
        procs = [(i, c.type.dialect_impl(dialect).result_processor(dialect, None)) for i, c in enumerate(self._columns)]
        return [(i, proc) for i, proc in procs if proc is not None]

    def _build(self, row: Sequence[Any], dialect: sa.Dialect) -> T:
        values = list(row)
        for i, proc in self._processors(dialect):  # the few typed columns (timestamps, JSON); the rest as the driver's
            if values[i] is not None:
                values[i] = proc(values[i])
        return self._make(values)


def _hashable(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The row as a dictionary key: decoded JSON values frozen."""
    return tuple(tuple(v) if isinstance(v, list) else orjson.dumps(v) if isinstance(v, dict) else v for v in row)
