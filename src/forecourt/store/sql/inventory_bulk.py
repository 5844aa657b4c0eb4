"""Batch writes of a feed import: few round trips per thousand vehicles, with the same events as ``upsert``.

The importer reads a batch's stored vehicles with :func:`get_many_by_vin`, decides per vehicle whether it
is new, changed or unchanged, and hands the three lists to :func:`write_import`: new vehicles go in with
``COPY`` (PostgreSQL) or an executemany ``INSERT`` (SQLite), changed ones with one executemany ``UPDATE``,
unchanged ones only get ``last_verified_at`` refreshed (one ``UPDATE`` per batch); ``created``/``updated``
change events go to the outbox in the same transaction, exactly as :meth:`SqlInventoryRepository.upsert`
writes them one by one.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from forecourt import caching
from forecourt.domain.events import ChangeEvent, ChangeType, ResourceType, change_of
from forecourt.domain.timeutil import utcnow
from forecourt.domain.vehicle import Vehicle, VehicleStatus
from forecourt.store.sa_asyncio import AsyncConnection
from forecourt.store.sa_postgresql import postgresql
from forecourt.store.sql import search
from forecourt.store.sql.context import TxContext, new_id
from forecourt.store.sql.tables import outbox, vehicles

_V = vehicles.c
_IN_CHUNK = 1_000


def _event(vehicle: Vehicle, change: ChangeType, at: datetime) -> dict[str, Any]:
    """The outbox row of a vehicle's change event (what ``TxContext.append_event`` writes for a ChangeEvent)."""
    return {
        "id": new_id(),
        "dealership_id": vehicle.dealership_id,
        "resource_type": ResourceType.VEHICLE.value,
        "resource_id": vehicle.id,
        "change_type": change.value,
        "status": vehicle.status.value,
        "occurred_at": at,
        "payload": {"vin": vehicle.vin, "stock": vehicle.stock},
    }


async def get_many_by_vin(
    ctx: TxContext, dealership_id: str, vins: Collection[str], columns: Sequence[Any], from_row: Any, *, lock: bool
) -> dict[str, Vehicle]:
    """The dealership's vehicles with these VINs, by VIN (with ``lock``, after taking the outbox lock).

    The outbox lock (PostgreSQL: a transaction-scoped advisory lock; SQLite: the single writer) is taken
    by every repository method that changes a vehicle before it reads, so what this returns stays true
    until the transaction ends, without locking a hundred thousand rows one by one.
    """
    if lock:
        await ctx.lock_outbox()
    wanted = sorted({v.strip().upper() for v in vins})
    found: dict[str, Vehicle] = {}
    for start in range(0, len(wanted), _IN_CHUNK):
        chunk = wanted[start : start + _IN_CHUNK]
        # No FOR UPDATE: every writer of vehicles takes the outbox lock first, which ``lock`` holds now.
        if ctx.is_postgres:
            rows = await ctx.conn.execute(_by_vin_postgres(tuple(columns)), {"dealer": dealership_id, "vins": chunk})
        else:
            rows = await ctx.conn.execute(
                sa.select(*columns).where(_V.dealership_id == dealership_id, _V.vin.in_(chunk))
            )
        for row in rows:
            vehicle = from_row(row)
            found[vehicle.vin] = vehicle
    return found


@caching.memo("store.vehicles_by_vin", 16)
def _by_vin_postgres(columns: tuple[Any, ...]) -> sa.Select[*tuple[Any, ...]]:
    """One probe of the ``(dealership_id, vin)`` unique index per VIN, whatever the table's statistics say.

    ``vin IN (...)`` leaves the plan to the statistics, and a table that grows inside the import's
    transaction has none that count its rows yet: PostgreSQL then guesses a dealership holds a few hundred
    vehicles, scans all of them once per batch, and a first import of 100,000 rows turns quadratic. A
    lateral subquery with ``LIMIT 1`` (never flattened into a join) that matches every column of the
    unique key has one plan only: a nested loop over the VINs with an index lookup each.
    """
    vins = sa.bindparam("vins", type_=postgresql.ARRAY(sa.String()))
    keys = sa.func.unnest(vins).table_valued("vin").render_derived("k")
    dealer = sa.bindparam("dealer", type_=sa.String())
    probe = sa.select(*columns).where(_V.dealership_id == dealer, _V.vin == keys.c.vin).limit(1).lateral("v")
    return sa.select(*probe.c).select_from(keys).join(probe, sa.true())


async def write_import(
    ctx: TxContext,
    created: Sequence[Vehicle],
    changed: Sequence[Vehicle],
    verified: Sequence[str],
    at: datetime,
    to_row: Any,
) -> None:
    """Insert ``created``, overwrite ``changed`` (by id), refresh ``last_verified_at`` of ``verified`` ids."""
    await ctx.lock_outbox()
    now = utcnow()
    events: list[dict[str, Any]] = []
    if created:
        rows = []
        for vehicle in created:
            stamp = vehicle.created_at or now
            rows.append({**to_row(vehicle), "created_at": stamp, "updated_at": vehicle.updated_at or stamp})
            events.append(_event(vehicle, ChangeType.CREATED, stamp))
        await _insert_rows(ctx, vehicles, rows)
    if changed:
        was_removed = await _removed_ids(ctx, [v.id for v in changed])
        await _update_changed(ctx, changed, now, to_row)
        events.extend(_event(v, _change(v.id in was_removed, v), now) for v in changed)
    await _refresh_verified(ctx, verified, at)
    await _insert_rows(ctx, outbox, events)


_VERIFY_POSTGRES = (
    sa.update(vehicles)
    .where(_V.id == sa.func.any(sa.bindparam("ids", type_=postgresql.ARRAY(sa.String()))))
    .values(last_verified_at=sa.bindparam("at", type_=vehicles.c.last_verified_at.type))
)


async def _refresh_verified(ctx: TxContext, verified: Sequence[str], at: datetime) -> None:
    """``last_verified_at = at`` for these ids: one statement per batch (PostgreSQL: one array parameter)."""
    if ctx.is_postgres:
        if verified:
            await ctx.conn.execute(_VERIFY_POSTGRES, {"ids": list(verified), "at": at})
        return
    for start in range(0, len(verified), _IN_CHUNK):
        ids = list(verified[start : start + _IN_CHUNK])
        await ctx.conn.execute(sa.update(vehicles).where(_V.id.in_(ids)).values(last_verified_at=at))


async def _insert_rows(ctx: TxContext, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Insert rows: ``COPY`` on PostgreSQL (in this transaction), multi-row executemany on SQLite."""
    if not rows:
        return
    if ctx.is_postgres and isinstance(ctx.conn, AsyncConnection):
        names = [c.name for c in table.columns if c.name in rows[0]]
        json_columns = {c.name for c in table.columns if isinstance(c.type, sa.JSON)}
        records = [tuple(json.dumps(row[n]) if n in json_columns else row[n] for n in names) for row in rows]
        import asyncpg

        driver: Any = (await ctx.conn.get_raw_connection()).driver_connection  # asyncpg, in this transaction
        try:
            await driver.copy_records_to_table(table.name, records=records, columns=names)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            # Raised as SQLAlchemy raises every other statement's failure, so callers see one kind of error.
            raise sa.exc.DBAPIError(f"COPY {table.name}", None, exc) from exc
        return
    await ctx.execute_many(sa.insert(table), rows)


def _change(was_removed: bool, vehicle: Vehicle) -> ChangeType:
    return change_of(was_listed=not was_removed, is_listed=vehicle.status is not VehicleStatus.REMOVED)


async def _removed_ids(ctx: TxContext, ids: Sequence[str]) -> set[str]:
    """Which of these vehicles are stored ``removed`` (their change is a re-creation, not an update)."""
    found: set[str] = set()
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = ids[start : start + _IN_CHUNK]
        stmt = sa.select(_V.id).where(_V.id.in_(chunk), _V.status == VehicleStatus.REMOVED.value)
        found.update(str(vid) for vid in (await ctx.conn.execute(stmt)).scalars())
    return found


async def _update_changed(ctx: TxContext, changed: Sequence[Vehicle], now: datetime, to_row: Any) -> None:
    rows = []
    for vehicle in changed:
        row = to_row(vehicle)
        row["updated_at"] = now
        row["b_id"] = row.pop("id")
        row.pop("created_at", None)
        rows.append(row)
    names = [k for k in rows[0] if k != "b_id"]
    stmt = (
        sa.update(vehicles)
        .where(_V.id == sa.bindparam("b_id"))
        .values({name: sa.bindparam(name) for name in names})
        .execution_options(synchronize_session=False)
    )
    await ctx.execute_many(stmt, rows)


async def offerable_vins(ctx: TxContext, dealership_id: str) -> set[str]:
    """VINs of the dealership's vehicles that are on offer (what a full import may remove)."""
    stmt = sa.select(_V.vin).where(_V.dealership_id == dealership_id, _V.status.in_(search.OFFERABLE))
    return {str(vin) for vin in (await ctx.conn.execute(stmt)).scalars()}


async def mark_removed_except(ctx: TxContext, dealership_id: str, keep_vins: set[str], at: datetime) -> int:
    """Mark every offerable vehicle whose VIN is not in ``keep_vins`` removed, with one ``deleted`` event each."""
    await ctx.lock_outbox()
    keep = {v.strip().upper() for v in keep_vins}
    stmt = sa.select(_V.id, _V.vin, _V.stock).where(_V.dealership_id == dealership_id, _V.status.in_(search.OFFERABLE))
    gone = [(str(r.id), str(r.vin), str(r.stock)) for r in await ctx.conn.execute(stmt) if r.vin not in keep]
    values = {"status": VehicleStatus.REMOVED.value, "updated_at": at}
    events: list[ChangeEvent] = []
    for start in range(0, len(gone), _IN_CHUNK):
        chunk = gone[start : start + _IN_CHUNK]
        await ctx.conn.execute(sa.update(vehicles).where(_V.id.in_([g[0] for g in chunk])).values(**values))
        events.extend(
            ChangeEvent(
                id=new_id(), dealership_id=dealership_id, resource_type=ResourceType.VEHICLE, resource_id=vid,
                change_type=ChangeType.DELETED, status=VehicleStatus.REMOVED.value, occurred_at=at,
                payload={"vin": vin, "stock": stock},
            )
            for vid, vin, stock in chunk
        )  # fmt: skip
        await ctx.emit_many(events[-len(chunk) :])
    return len(gone)
