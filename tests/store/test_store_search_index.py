"""The common sorts read a page from an index range on SQLite and PostgreSQL: the plans, the capped and labelled
total, and keyset pages that walk the same order as offset pages.

Two rooftops of 2,000 vehicles each (prices in 50,000-cent steps, so many ties; one unit in ten not offerable),
written as a feed import writes them. The plans are those of the statements the store runs (``search_statements``),
compiled for the database at hand; PostgreSQL's are taken after ``ANALYZE`` (what autovacuum gives a real table).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from forecourt.domain.vehicle import (
    TOTAL_COUNTED_UP_TO,
    InventoryFilters,
    InventoryQuery,
    SortField,
    Vehicle,
    VehicleStatus,
)
from forecourt.store import SqlStore
from forecourt.store.sql.inventory import search_statements

from .factories import DEALER, OTHER_DEALER, vehicle

ROOFTOP = 2_000
MAKES = ("Toyota", "Honda", "Ford", "Chevrolet", "Nissan", "Hyundai", "Subaru", "Kia", "Jeep", "BMW")
STATUSES = [VehicleStatus.AVAILABLE] * 17 + [VehicleStatus.IN_TRANSIT, VehicleStatus.SOLD, VehicleStatus.PENDING]


def _units(dealership_id: str, first: int) -> Iterator[Vehicle]:
    rng = random.Random(first)
    for n in range(first, first + ROOFTOP):
        yield vehicle(
            n,
            dealership_id=dealership_id,
            price=rng.randrange(1_000_000, 6_000_000, 50_000),
            year=rng.randint(2012, 2025),
            mileage=rng.randrange(0, 150_000, 500),
            make=rng.choice(MAKES),
            status=rng.choice(STATUSES),
        )


@pytest.fixture
async def rooftops(store: SqlStore) -> SqlStore:
    """2,000 vehicles at ``dealer-a`` and 2,000 at ``dealer-b``, analysed on PostgreSQL."""
    for dealer, first in ((DEALER, 1), (OTHER_DEALER, 100_001)):
        await store.bulk_load_vehicles(_units(dealer, first), dealership_id=dealer, batch_size=1_000)
    if store.engine.dialect.name == "postgresql":
        async with store.engine.connect() as conn:
            await conn.execute(sa.text("ANALYZE vehicles"))
            await conn.commit()
    return store


SqlitePlan = list[tuple[int, int, str]]


async def _plan(store: SqlStore, statement: sa.Select[Any]) -> SqlitePlan | dict[str, Any]:
    """SQLite: EXPLAIN QUERY PLAN rows (id, parent, detail); PostgreSQL: EXPLAIN (ANALYZE, BUFFERS) as JSON."""
    async with store.engine.connect() as conn:
        sql = str(statement.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        if conn.dialect.name == "sqlite":
            rows = (await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")).all()
            return [(int(row[0]), int(row[1]), str(row[3])) for row in rows]
        raw = (await conn.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")).scalar_one()
    plan: dict[str, Any] = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    return plan


def _nodes(plan: dict[str, Any], parent: dict[str, Any] | None = None) -> Iterator[tuple[dict[str, Any], Any]]:
    yield plan, parent
    for child in plan.get("Plans", ()):
        yield from _nodes(child, plan)


def _sqlite_scan_is_ordered(plan: SqlitePlan, index: str) -> None:
    """The index is searched (the table never scanned), and its query level sorts nothing in a temporary B-tree."""
    using = [parent for _, parent, detail in plan if f"INDEX {index} " in detail]
    assert using, plan
    assert not [detail for _, parent, detail in plan if parent == using[0] and "TEMP B-TREE" in detail], plan
    assert not [detail for *_, detail in plan if detail.startswith("SCAN vehicles")], plan


def _postgres_rows_read(plan: dict[str, Any], index: str) -> int:
    """Rows the index scan handed over or filtered out; fails on a sequential scan or a sort above the scan."""
    nodes = list(_nodes(plan))
    assert not [n for n, _ in nodes if n["Node Type"] == "Seq Scan"], plan
    scans = [(n, parent) for n, parent in nodes if n.get("Index Name") == index]
    assert scans, plan
    scan, parent = scans[0]
    assert parent is not None, plan
    assert parent["Node Type"] == "Limit", plan  # no Sort between the scan and its LIMIT
    return int(scan["Actual Rows"]) + int(scan.get("Rows Removed by Filter", 0))


@pytest.mark.parametrize(
    ("sort", "descending", "filters", "index"),
    [
        (SortField.PRICE, False, InventoryFilters(), "ix_vehicles_dealer_price_id"),
        (SortField.PRICE, True, InventoryFilters(), "ix_vehicles_dealer_price_id"),
        (SortField.YEAR, True, InventoryFilters(), "ix_vehicles_dealer_year_id"),
        (SortField.MILEAGE, False, InventoryFilters(), "ix_vehicles_dealer_mileage_id"),
        (SortField.PRICE, False, InventoryFilters(make=("toyota",)), "ix_vehicles_dealer_make_price_id"),
    ],
)
async def test_the_first_twenty_of_a_common_sort_are_read_from_its_index_without_a_sort(
    rooftops: SqlStore, sort: SortField, descending: bool, filters: InventoryFilters, index: str
) -> None:
    query = InventoryQuery(dealership_id=DEALER, filters=filters, sort=sort, descending=descending, limit=20)
    plan = await _plan(rooftops, search_statements(query, True)[0])
    if isinstance(plan, list):
        _sqlite_scan_is_ordered(plan, index)
    else:
        assert _postgres_rows_read(plan, index) <= 40  # 20 offerable ones, and the few others met on the way


@pytest.mark.parametrize(
    ("sort", "descending", "index"),
    [
        (SortField.PRICE, False, "ix_vehicles_dealer_price_id"),
        (SortField.YEAR, True, "ix_vehicles_dealer_year_id"),
        (SortField.MILEAGE, False, "ix_vehicles_dealer_mileage_id"),
        (None, False, "ix_vehicles_dealer_id_status"),
    ],
)
async def test_a_page_of_a_rooftops_offerable_units_reads_its_rows_in_the_indexs_order_once(
    rooftops: SqlStore, sort: SortField | None, descending: bool, index: str
) -> None:
    query = InventoryQuery(dealership_id=DEALER, sort=sort, descending=descending, limit=20)
    plan = await _plan(rooftops, search_statements(query, True)[0])
    if isinstance(plan, list):  # one search of the index, the rows read from it: no second lookup, no sort
        assert [detail for *_, detail in plan] == [f"SEARCH vehicles USING INDEX {index} (dealership_id=?)"], plan
    else:
        kinds = [node["Node Type"] for node, _ in _nodes(plan)]
        assert "Sort" not in kinds, plan
        assert not {"Nested Loop", "Hash Join", "Merge Join"} & set(kinds), plan
        assert _postgres_rows_read(plan, index) <= 40


async def test_a_keyset_page_seeks_into_the_same_index_range(rooftops: SqlStore) -> None:
    async with rooftops.read() as uow:
        first = await uow.inventory.search_cards(InventoryQuery(dealership_id=DEALER, sort=SortField.PRICE))
    assert first.after is not None
    query = InventoryQuery(dealership_id=DEALER, sort=SortField.PRICE, offset=1_000, after=first.after)
    plan = await _plan(rooftops, search_statements(query, True)[0])
    if isinstance(plan, list):
        _sqlite_scan_is_ordered(plan, "ix_vehicles_dealer_price_id")
        assert any("(price_minor,id)>(?,?)" in detail for *_, detail in plan), plan
    else:
        assert _postgres_rows_read(plan, "ix_vehicles_dealer_price_id") <= 40


async def test_the_count_reads_at_most_the_cap_past_the_pages_start(rooftops: SqlStore) -> None:
    query = InventoryQuery(dealership_id=DEALER, sort=SortField.PRICE)
    plan = await _plan(rooftops, search_statements(query, True)[1])
    if isinstance(plan, list):
        assert not [detail for *_, detail in plan if detail.startswith("SCAN vehicles")], plan
        return
    limits = [n for n, _ in _nodes(plan) if n["Node Type"] == "Limit"]
    assert [int(n["Actual Rows"]) for n in limits] == [TOTAL_COUNTED_UP_TO + 1]
    scanned = [n for n, _ in _nodes(plan) if n["Node Type"] in ("Index Only Scan", "Index Scan")]
    assert sum(int(n["Actual Rows"]) + int(n.get("Rows Removed by Filter", 0)) for n in scanned) <= 2 * (
        TOTAL_COUNTED_UP_TO + 1
    )


def _offerable(dealer: str, first: int, **match: Any) -> int:
    return sum(
        1 for v in _units(dealer, first) if v.status.offerable and all(getattr(v, k) == w for k, w in match.items())
    )


async def test_a_search_counts_up_to_the_cap_and_says_when_its_total_is_a_lower_bound(rooftops: SqlStore) -> None:
    offerable = _offerable(DEALER, 1)
    toyotas = _offerable(DEALER, 1, make="Toyota", year=2020)
    async with rooftops.read() as uow:
        first = await uow.inventory.search_cards(InventoryQuery(dealership_id=DEALER, sort=SortField.PRICE))
        near_end = await uow.inventory.search(
            InventoryQuery(dealership_id=DEALER, sort=SortField.PRICE, offset=offerable - 50, limit=20)
        )
        narrow = await uow.inventory.search(
            InventoryQuery(
                dealership_id=DEALER, filters=InventoryFilters(make=("toyota",), year_min=2020, year_max=2020), limit=5
            )
        )
        past = await uow.inventory.search(InventoryQuery(dealership_id=DEALER, offset=offerable + 5))
    assert (first.total, first.total_exact, len(first.items)) == (TOTAL_COUNTED_UP_TO, False, 20)
    assert (near_end.total, near_end.total_exact, near_end.has_more) == (offerable, True, True)
    assert 5 < toyotas < TOTAL_COUNTED_UP_TO
    assert (narrow.total, narrow.total_exact) == (toyotas, True)
    assert (past.items, past.total, past.total_exact, past.has_more) == ([], offerable, True, False)


@pytest.mark.parametrize(
    ("sort", "descending"),
    [
        (SortField.PRICE, False),
        (SortField.PRICE, True),
        (SortField.YEAR, True),
        (SortField.MILEAGE, False),
        (None, False),
    ],
)
async def test_keyset_pages_walk_the_same_order_as_offset_pages(
    rooftops: SqlStore, sort: SortField | None, descending: bool
) -> None:
    by_offset: list[str] = []
    by_key: list[str] = []
    after: tuple[int | str, ...] | None = None
    async with rooftops.read() as uow:
        while True:
            base = InventoryQuery(dealership_id=DEALER, sort=sort, descending=descending, limit=100)
            offset_page = await uow.inventory.search_cards(base.model_copy(update={"offset": len(by_offset)}))
            key_page = await uow.inventory.search_cards(base.model_copy(update={"offset": len(by_key), "after": after}))
            by_offset += [c.id for c in offset_page.items]
            by_key += [c.id for c in key_page.items]
            assert key_page.total == offset_page.total
            if not key_page.items or key_page.offset + len(key_page.items) >= key_page.total:
                break
            after = key_page.after
    assert by_key == by_offset
    assert len(by_key) == len(set(by_key)) == _offerable(DEALER, 1)
