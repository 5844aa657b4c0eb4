"""Repeated SQLite searches run straight on the driver and answer exactly what SQLAlchemy's path answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.exc import OperationalError

from forecourt.demo import load_demo
from forecourt.domain.vehicle import Condition, InventoryFilters, InventoryQuery, SortField, VehicleStatus
from forecourt.store import SqlStore, create_engine, upgrade_async
from forecourt.store.sql.inline import InlineConnection
from forecourt.store.sql.inventory import PREPARED_SEARCHES
from forecourt.store.sql.prepared import DriverStatement, PreparedReads, driver_statement
from forecourt.store.sql.store import SqlUnitOfWork


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[SqlStore, SqlStore, str]]:
    """The demo data in one SQLite file, read inline and (for comparison) through the async engine."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'forecourt.db'}"
    await upgrade_async(url)
    inline = SqlStore(create_engine(url))
    await load_demo(inline, vehicles_per_dealership=40)
    asynchronous = SqlStore(create_engine(url), inline_reads=False)
    async with inline.read() as uow:
        dealerships = await uow.tenancy.list_dealerships()
    try:
        yield inline, asynchronous, dealerships[0].id
    finally:
        await inline.close()
        await asynchronous.close()


def _queries(dealer: str) -> list[InventoryQuery]:
    return [
        InventoryQuery(dealership_id=dealer, limit=20),
        InventoryQuery(dealership_id=dealer, limit=5, offset=5),  # a later page: the count statement runs too
        InventoryQuery(dealership_id=dealer, filters=InventoryFilters(include_unavailable=True), limit=100),
        InventoryQuery(
            dealership_id=dealer,
            filters=InventoryFilters(
                condition=(Condition.USED, Condition.NEW), year_min=2015, price_max_minor=9_000_000
            ),
            sort=SortField.PRICE,
            descending=True,
            limit=7,
        ),
        InventoryQuery(
            dealership_id=dealer,
            filters=InventoryFilters(status=(VehicleStatus.AVAILABLE,), mileage_max=200_000),
            sort=SortField.LAST_VERIFIED_AT,
            limit=3,
            offset=2,
        ),
        InventoryQuery(dealership_id=dealer, filters=InventoryFilters(query="awd"), sort=SortField.MAKE, limit=4),
        InventoryQuery(dealership_id="no-such-dealer", limit=20),
    ]


async def test_a_repeated_search_is_prepared_and_answers_what_the_sqlalchemy_path_answers(
    stores: tuple[SqlStore, SqlStore, str],
) -> None:
    inline, asynchronous, dealer = stores
    queries = _queries(dealer)
    before = len(PREPARED_SEARCHES)
    for query in queries:
        async with asynchronous.read() as uow:
            expected = await uow.inventory.search(query)
        answers = []
        for _ in range(3):  # seen once (SQLAlchemy's path), then prepared on the second and kept for the third
            async with inline.read() as uow:
                assert isinstance(uow, SqlUnitOfWork)
                assert isinstance(uow.connection, InlineConnection)
                answers.append(await uow.inventory.search(query))
        for page in answers:
            assert page.total == expected.total
            assert [v.model_dump(mode="json") for v in page.items] == [
                v.model_dump(mode="json") for v in expected.items
            ]
    assert len(PREPARED_SEARCHES) >= min(before + len(queries), 256)
    assert any(len(q.filters.condition) == 2 for q in queries)


async def test_a_prepared_search_sees_the_rows_committed_since_it_was_prepared(
    stores: tuple[SqlStore, SqlStore, str],
) -> None:
    inline, _, dealer = stores
    query = InventoryQuery(dealership_id=dealer, filters=InventoryFilters(include_unavailable=True), limit=1000)
    for _ in range(2):
        async with inline.read() as uow:
            first = await uow.inventory.search(query)
    async with inline.transaction() as uow:
        await uow.inventory.set_status(dealer, first.items[0].id, "sold", datetime.now(UTC))
    async with inline.read() as uow:
        after = await uow.inventory.search(query)
    assert after.total == first.total
    changed = {v.id: v for v in after.items}[first.items[0].id]
    assert changed.status is VehicleStatus.SOLD


def test_statements_are_prepared_from_their_second_sighting_and_at_most_size_are_kept() -> None:
    dialect = sqlite.dialect(paramstyle="qmark")
    reads = PreparedReads(size=2)
    table = sa.table("t", sa.column("a"), sa.column("b"))

    def statements(n: int) -> list[sa.Select[tuple[object]]]:
        return [sa.select(table.c.a).where(table.c.b.in_([n, n + 1]), table.c.a > n)]

    assert reads.get(1, dialect, lambda: statements(1)) is None
    prepared = reads.get(1, dialect, lambda: statements(1))
    assert prepared == (DriverStatement("SELECT t.a \nFROM t \nWHERE t.b IN (?, ?) AND t.a > ?", (1, 2, 1)),)
    assert reads.get(1, dialect, lambda: statements(1)) is prepared
    for n in (2, 3):
        reads.get(n, dialect, lambda n=n: statements(n))  # type: ignore[misc]
        reads.get(n, dialect, lambda n=n: statements(n))  # type: ignore[misc]
    assert len(reads) == 2
    assert reads.get(1, dialect, lambda: statements(1)) is None  # the oldest went first
    assert reads.get(["unhashable"], dialect, lambda: statements(1)) is None


def test_a_named_parameter_dialect_is_not_prepared() -> None:
    table = sa.table("t", sa.column("a"))
    assert driver_statement(sa.select(table.c.a).where(table.c.a == 1), sqlite.dialect(paramstyle="named")) is None


async def test_a_driver_error_is_raised_as_sqlalchemys_own(stores: tuple[SqlStore, SqlStore, str]) -> None:
    inline, _, _ = stores
    async with inline.read() as uow:
        assert isinstance(uow, SqlUnitOfWork)
        assert isinstance(uow.connection, InlineConnection)
        with pytest.raises(OperationalError):
            uow.connection.driver_rows(DriverStatement("SELECT * FROM no_such_table WHERE a = ?", (1,)))
