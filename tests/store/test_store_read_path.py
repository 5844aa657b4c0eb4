"""The read path: rows become vehicles without re-validation, and SQLite reads run inline on their own snapshot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.exc import OperationalError

from forecourt.actions.inventory import CARD_FIELDS
from forecourt.actions.representations import CARD_REPRESENTATIONS, VehicleReprs, card_repr, vehicle_repr
from forecourt.demo import load_demo
from forecourt.domain.vehicle import InventoryFilters, InventoryQuery
from forecourt.store import SqlStore, create_engine, upgrade_async
from forecourt.store.sql.driver_rows import DriverRows
from forecourt.store.sql.inline import InlineConnection
from forecourt.store.sql.inventory import (
    _SELECT_COLUMNS,
    _vehicle_from_values,
    validated_vehicle_from_row,
    vehicle_from_row,
    vehicle_row,
)
from forecourt.store.sql.store import SqlUnitOfWork
from forecourt.store.sql.tables import vehicles
from forecourt.surfaces.mcp.views import COMPACT_FIELDS

from .conftest import seed_tenancy
from .factories import DEALER, vehicle


async def test_a_vehicles_card_shows_what_its_compact_view_showed_for_all_demo_data(store: SqlStore) -> None:
    await load_demo(store, vehicles_per_dealership=10)
    async with store.transaction() as uow:
        assert isinstance(uow, SqlUnitOfWork)
        rows = list(await uow.connection.execute(sa.select(*_SELECT_COLUMNS).select_from(vehicles)))
    for row in rows:
        full = vehicle_repr(vehicle_from_row(row))
        assert card_repr(vehicle_from_row(row).card()) == {k: full[k] for k in COMPACT_FIELDS["inventory.search"]}
    assert tuple(COMPACT_FIELDS["inventory.search"]) == CARD_FIELDS


async def test_vehicles_read_back_equal_their_validated_form_for_all_demo_data(store: SqlStore) -> None:
    await load_demo(store, vehicles_per_dealership=25)
    async with store.transaction() as uow:
        assert isinstance(uow, SqlUnitOfWork)
        rows = list(await uow.connection.execute(sa.select(*_SELECT_COLUMNS).select_from(vehicles)))
    assert len(rows) >= 25
    for row in rows:
        fast, checked = vehicle_from_row(row), validated_vehicle_from_row(row)
        assert fast == checked
        assert fast.model_dump(mode="json") == checked.model_dump(mode="json")
        assert type(fast.status) is type(checked.status)
        assert type(fast.condition) is type(checked.condition)
        assert fast.model_fields_set == checked.model_fields_set
        assert fast.model_copy(update={"stock": "X1"}).stock == "X1"
        with pytest.raises(ValidationError):
            fast.stock = "X2"  # still frozen


@pytest.fixture
async def file_store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'forecourt.db'}"
    await upgrade_async(url)
    sql_store = SqlStore(create_engine(url))
    await seed_tenancy(sql_store)
    try:
        yield sql_store
    finally:
        await sql_store.close()


def _query() -> InventoryQuery:
    return InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(), offset=0, limit=10)


async def test_sqlite_file_reads_run_inline_and_see_every_committed_write(file_store: SqlStore) -> None:
    async with file_store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    async with file_store.read() as uow:
        assert isinstance(uow, SqlUnitOfWork)
        assert isinstance(uow.connection, InlineConnection)
        page = await uow.inventory.search(_query())
    assert [v.vin for v in page.items] == [vehicle(1).vin]


async def test_a_sqlite_read_does_not_wait_for_an_open_writer_and_sees_its_own_snapshot(file_store: SqlStore) -> None:
    async with file_store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    async with file_store.transaction() as writer:  # holds the write lock (BEGIN IMMEDIATE) until the block ends
        await writer.inventory.upsert(vehicle(2))
        async with file_store.read() as reader:
            during = await reader.inventory.search(_query())
    async with file_store.read() as reader:
        after = await reader.inventory.search(_query())
    assert during.total == 1
    assert after.total == 2


async def test_a_sqlite_read_unit_of_work_refuses_to_write(file_store: SqlStore) -> None:
    with pytest.raises(OperationalError):
        async with file_store.read() as uow:
            await uow.inventory.upsert(vehicle(3))
    async with file_store.read() as uow:
        assert (await uow.inventory.search(_query())).total == 0


def _inline(uow: object) -> InlineConnection:
    assert isinstance(uow, SqlUnitOfWork)
    assert isinstance(uow.connection, InlineConnection)
    return uow.connection


async def test_a_kept_read_connection_starts_each_read_on_a_fresh_snapshot(file_store: SqlStore) -> None:
    # Reads one after another reuse one kept connection: each must end its transaction, or the next would
    # still see the snapshot of the first.
    seen = []
    for n in (1, 2, 3):
        async with file_store.transaction() as uow:
            await uow.inventory.upsert(vehicle(n))
        async with file_store.read() as reader:
            connection = _inline(reader)
            seen.append((id(connection.dbapi_connection), (await reader.inventory.search(_query())).total))
            assert connection.dbapi_connection.in_transaction
    assert [total for _, total in seen] == [1, 2, 3]
    assert len({conn for conn, _ in seen}) == 1


async def test_a_read_through_sqlalchemy_joins_the_read_transaction_and_ends_with_it(file_store: SqlStore) -> None:
    async with file_store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    async with file_store.read() as reader:
        connection = _inline(reader)
        async with file_store.transaction() as writer:  # committed while the read's snapshot is open
            await writer.inventory.upsert(vehicle(2))
        await reader.inventory.search(_query())  # fixes the snapshot: two vehicles
        counted = await connection.scalar(sa.select(sa.func.count()).select_from(vehicles))
    assert counted == 2
    assert not connection.sync_connection.in_transaction()
    assert not connection.dbapi_connection.in_transaction


async def _failing_read(store: SqlStore) -> InlineConnection:
    async with store.read() as failed:
        kept = _inline(failed)
        await kept.execute(sa.text("SELECT * FROM no_such_table"))
    return kept


async def test_reads_open_at_once_each_get_a_connection_and_a_failed_read_leaves_none_open(
    file_store: SqlStore,
) -> None:
    async with file_store.read() as first, file_store.read() as second:
        assert _inline(first).dbapi_connection is not _inline(second).dbapi_connection
    with pytest.raises(OperationalError):
        await _failing_read(file_store)
    async with file_store.read() as after:  # the failed read's connection, its transaction rolled back
        assert (await after.inventory.search(_query())).total == 0
    for connection, _ in file_store._inline._idle if file_store._inline else ():
        assert not connection.in_transaction()


async def test_in_memory_sqlite_and_opted_out_stores_keep_async_reads(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    await upgrade_async(url)
    opted_out = SqlStore(create_engine(url), inline_reads=False)
    memory = SqlStore(create_engine("sqlite+aiosqlite://"))
    try:
        assert opted_out.read_engine is None
        assert memory.read_engine is None
        async with opted_out.read() as uow:
            assert isinstance(uow, SqlUnitOfWork)
            assert not isinstance(uow.connection, InlineConnection)
    finally:
        await opted_out.close()
        await memory.close()


def test_a_repeated_search_reuses_its_statements_and_a_different_one_does_not() -> None:
    from forecourt.store.sql.inventory import search_statements

    first = InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(make=("Toyota",)), limit=5)
    same = InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(make=("Toyota",)), limit=5)
    other = InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(make=("Honda",)), limit=5)
    assert search_statements(first) is search_statements(same)
    assert search_statements(first) is not search_statements(other)
    page, _ = search_statements(other)
    assert "honda" in str(page.compile(compile_kwargs={"literal_binds": True}))


async def test_a_search_built_without_validation_still_runs(file_store: SqlStore) -> None:
    unhashable = InventoryQuery.model_construct(
        dealership_id=DEALER,
        filters=InventoryFilters.model_construct(**{**InventoryFilters().__dict__, "make": ["Toyota"]}),
        sort=None,
        descending=False,
        offset=0,
        limit=5,
    )
    async with file_store.read() as uow:
        page = await uow.inventory.search(unhashable)
    assert page.total == len(page.items)


async def test_searched_vehicles_equal_their_validated_rows_and_a_row_seen_again_gives_the_same_vehicle(
    store: SqlStore,
) -> None:
    await load_demo(store, vehicles_per_dealership=25)
    async with store.transaction() as uow:
        assert isinstance(uow, SqlUnitOfWork)
        rows = list(await uow.connection.execute(sa.select(*_SELECT_COLUMNS).select_from(vehicles)))
        dealership = rows[0]._mapping["dealership_id"]
        query = InventoryQuery(
            dealership_id=dealership, filters=InventoryFilters(include_unavailable=True), offset=0, limit=100
        )
        first, second, third = [(await uow.inventory.search(query)).items for _ in range(3)]
    checked = {v.id: validated_vehicle_from_row(r) for r in rows for v in [vehicle_from_row(r)]}
    assert len(first) >= 25
    for found in first + third:
        assert found == checked[found.id]
        assert found.model_dump(mode="json") == checked[found.id].model_dump(mode="json")
        assert type(found.status) is type(checked[found.id].status)
    assert all(a is not b for a, b in zip(first, second, strict=True))  # seen once: built, not kept
    assert all(b is c for b, c in zip(second, third, strict=True))  # seen again: kept


def test_rows_seen_once_are_not_kept_and_the_kept_ones_are_bounded() -> None:
    class Cursor:
        def __init__(self, rows: list[tuple[Any, ...]]) -> None:
            self.rows = rows

        def fetchall(self) -> list[tuple[Any, ...]]:
            return self.rows

    class Result:
        def __init__(self, rows: list[tuple[Any, ...]]) -> None:
            self.cursor = Cursor(rows)

        def close(self) -> None:
            pass

    from sqlalchemy.dialects import sqlite

    dialect = sqlite.dialect()
    memo = DriverRows(_SELECT_COLUMNS, _vehicle_from_values, size=2)

    def row(n: int) -> tuple[Any, ...]:
        v = vehicle(n)
        values = {**vehicle_row(v), "photos": "[]", "last_verified_at": "2026-11-24 10:00:00.000000"}
        return tuple(values.get(c.name) for c in _SELECT_COLUMNS)

    rows = [row(n) for n in range(1, 4)]
    once = memo.from_result(Result(rows), dialect)  # type: ignore[arg-type]
    twice = memo.from_result(Result(rows), dialect)  # type: ignore[arg-type]
    assert [v.vin for v in once] == [v.vin for v in twice] == [vehicle(n).vin for n in range(1, 4)]
    kept = memo.from_result(Result(rows), dialect)  # type: ignore[arg-type]
    assert sum(a is b for a, b in zip(twice, kept, strict=True)) == 2  # the third kept one pushed out the first


async def test_a_changed_row_is_built_again_and_its_cards_representation_follows(store: SqlStore) -> None:
    await seed_tenancy(store)
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    query = InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(), offset=0, limit=10)
    for _ in range(2):
        async with store.transaction() as uow:
            (before,) = (await uow.inventory.search_cards(query)).items
    repr_before = CARD_REPRESENTATIONS.of([before])[0]
    assert CARD_REPRESENTATIONS.of([before])[0] is repr_before
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1, price=1_234_500))
    async with store.transaction() as uow:
        (after,) = (await uow.inventory.search_cards(query)).items
    assert after is not before
    assert after.price.amount_minor == 1_234_500
    repr_after = CARD_REPRESENTATIONS.of([after])[0]
    assert repr_after["price"] == {"amount_minor": 1_234_500, "currency": "USD"}
    assert repr_before["price"] != repr_after["price"]
    assert repr_after == card_repr(after)


def test_a_cards_representation_is_kept_for_that_very_card_and_the_memo_is_bounded() -> None:
    memo = VehicleReprs(card_repr, "test.card_reprs", size=2)
    a, b = vehicle(1).card(), vehicle(2).card()
    first = memo.of([a, b])
    assert memo.of([a])[0] is first[0]
    equal_to_a = vehicle(1).card()
    assert memo.of([equal_to_a])[0] is not first[0]  # another object: represented afresh
    assert memo.of([equal_to_a])[0] == first[0]
    assert len(memo) == 2
    assert memo.of([b])[0] is not first[1]  # the least recently used went
