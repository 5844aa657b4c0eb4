"""Bulk loading of vehicles: multi-row ``INSERT ... ON CONFLICT DO NOTHING``, one transaction per batch.

The fast path for benchmark data and large first imports. Rows are built by the inventory's own
``vehicle_row`` (search and lower-cased columns filled in); vehicles already stored (same id, or same
dealership and VIN) are left as they are, and no change events are written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from sqlalchemy.dialects import sqlite

from forecourt.domain.vehicle import Vehicle
from forecourt.errors import InvalidParams
from forecourt.store.sa_postgresql import postgresql
from forecourt.store.sql.inventory import vehicle_row
from forecourt.store.sql.tables import vehicles as vehicles_table

ROWS_PER_STATEMENT = 1_000


class _HasConnection(Protocol):
    connection: Any


async def insert_vehicles(connection: Any, vehicles: Sequence[Vehicle]) -> None:
    """Insert ``vehicles`` on an open connection, skipping those already stored; no change events."""
    dialect_insert = postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert
    stmt = dialect_insert(vehicles_table).on_conflict_do_nothing()
    rows = [vehicle_row(v) for v in vehicles]
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        await connection.execute(stmt, rows[start : start + ROWS_PER_STATEMENT])


async def bulk_load(
    transaction: Callable[[], AbstractAsyncContextManager[_HasConnection]],
    vehicles: Iterable[Vehicle],
    *,
    dealership_id: str | None,
    batch_size: int,
    progress: Callable[[int], None] | None,
) -> int:
    """Write ``vehicles`` in batches of ``batch_size``, each batch in its own transaction; returns how many."""
    if batch_size < 1:
        raise InvalidParams("batch_size must be at least 1.", details={"field": "batch_size"})
    done = 0
    batch: list[Vehicle] = []

    async def flush() -> None:
        nonlocal done
        async with transaction() as uow:
            await insert_vehicles(uow.connection, batch)
        done += len(batch)
        batch.clear()
        if progress is not None:
            progress(done)

    for vehicle in vehicles:
        if dealership_id is not None and vehicle.dealership_id != dealership_id:
            raise InvalidParams("A vehicle belongs to another dealership.", details={"field": "dealership_id"})
        batch.append(vehicle)
        if len(batch) >= batch_size:
            await flush()
    if batch:
        await flush()
    return done
