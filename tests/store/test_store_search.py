"""Inventory search contract: filters, the offerable-only default, sorting, paging, totals and facets."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from forecourt.domain.money import Money
from forecourt.domain.vehicle import Condition, InventoryFilters, InventoryQuery, SortField, VehicleStatus
from forecourt.store import SqlStore

from .factories import DEALER, OTHER_DEALER, T0, vehicle, vin

LOT: list[dict[str, Any]] = [
    {"make": "Toyota", "model": "Camry", "trim": "LE", "year": 2021, "price": 2_400_000, "mileage": 30_000},
    {
        "make": "Toyota",
        "model": "Camry",
        "trim": "XSE",
        "year": 2023,
        "price": 3_100_000,
        "mileage": 5_000,
        "exterior_color": "Red",
        "condition": Condition.NEW,
    },
    {
        "make": "Toyota",
        "model": "RAV4",
        "trim": "XLE",
        "year": 2022,
        "price": 2_900_000,
        "mileage": 12_000,
        "body": "SUV",
        "driveline": "AWD",
        "fuel": "Hybrid",
    },
    {
        "make": "Honda",
        "model": "Civic",
        "trim": "Sport",
        "year": 2020,
        "price": 2_000_000,
        "mileage": 41_000,
        "transmission": "Manual",
        "interior_color": "Gray",
    },
    {
        "make": "Honda",
        "model": "CR-V",
        "trim": "EX",
        "year": 2019,
        "price": 2_200_000,
        "mileage": 55_000,
        "body": "SUV",
        "exterior_color": "Blue",
        "condition": Condition.CPO,
    },
    {
        "make": "Ford",
        "model": "F-150",
        "trim": "XLT",
        "year": 2022,
        "price": 4_500_000,
        "mileage": 18_000,
        "body": "Truck",
        "driveline": "4WD",
        "status": VehicleStatus.IN_TRANSIT,
    },
    {
        "make": "Toyota",
        "model": "Camry",
        "trim": "SE",
        "year": 2022,
        "price": 2_700_000,
        "mileage": 20_000,
        "status": VehicleStatus.SOLD,
    },
    {
        "make": "Toyota",
        "model": "Corolla",
        "trim": "LE",
        "year": 2021,
        "price": 2_400_000,
        "mileage": 25_000,
        "status": VehicleStatus.REMOVED,
    },
]


@pytest.fixture
async def lot(store: SqlStore) -> SqlStore:
    """Eight vehicles at ``dealer-a`` (one sold, one removed, one in transit) and one at ``dealer-b``."""
    async with store.transaction() as uow:
        for n, fields in enumerate(LOT, start=1):
            await uow.inventory.upsert(vehicle(n, **fields))
        await uow.inventory.upsert(vehicle(99, dealership_id=OTHER_DEALER))
    return store


async def _search(store: SqlStore, **kwargs: Any) -> list[int]:
    """The ids found; every search is also run as a compact one, which must find each vehicle's card."""
    filters = kwargs.pop("filters", {})
    query = InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(**filters), **kwargs)
    async with store.transaction() as uow:
        page = await uow.inventory.search(query)
        cards = await uow.inventory.search_cards(query)
    assert cards.items == [v.card() for v in page.items]
    assert (cards.total, cards.offset, cards.limit) == (page.total, page.offset, page.limit)
    return [int(v.id.rsplit("-", 1)[1]) for v in page.items]


async def test_search_never_returns_sold_vehicles_by_default(lot: SqlStore) -> None:
    assert sorted(await _search(lot)) == [1, 2, 3, 4, 5, 6]


async def test_search_includes_unavailable_units_only_when_asked(lot: SqlStore) -> None:
    assert sorted(await _search(lot, filters={"include_unavailable": True})) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert await _search(lot, filters={"status": [VehicleStatus.SOLD]}) == [7]
    assert await _search(lot, filters={"status": ["in_transit"]}) == [6]


async def test_search_is_scoped_to_one_dealership(lot: SqlStore) -> None:
    query = InventoryQuery(dealership_id=OTHER_DEALER)
    async with lot.transaction() as uow:
        page = await uow.inventory.search(query)
    assert [v.id for v in page.items] == [vehicle(99, dealership_id=OTHER_DEALER).id]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"make": ["toyota"]}, [1, 2, 3]),
        ({"make": ["HONDA", "ford"]}, [4, 5, 6]),
        ({"make": ["Toyota"], "model": ["camry"]}, [1, 2]),
        ({"trim": ["xle", "Sport"]}, [3, 4]),
        ({"body": ["suv"]}, [3, 5]),
        ({"fuel": ["hybrid"]}, [3]),
        ({"transmission": ["manual"]}, [4]),
        ({"driveline": ["awd", "4wd"]}, [3, 6]),
        ({"exterior_color": ["red", "BLUE"]}, [2, 5]),
        ({"interior_color": ["gray"]}, [4]),
        ({"condition": ["new", "cpo"]}, [2, 5]),
        ({"year_min": 2022}, [2, 3, 6]),
        ({"year_max": 2020}, [4, 5]),
        ({"year_min": 2021, "year_max": 2022}, [1, 3, 6]),
        ({"price_min_minor": 2_400_000, "price_max_minor": 2_900_000}, [1, 3]),
        ({"mileage_max": 18_000}, [2, 3, 6]),
        ({"mileage_min": 40_000}, [4, 5]),
        ({"vin": vin(3).lower()}, [3]),
        ({"stock": "t00004"}, [4]),
        ({"query": "camry xse"}, [2]),
        ({"query": "red toyota"}, [2]),
        ({"query": "2022 suv"}, [3]),
        ({"query": "camry honda"}, []),
        ({"query": "100%_"}, []),
        ({"make": ["Tesla"]}, []),
    ],
)
async def test_search_applies_each_filter(lot: SqlStore, filters: dict[str, Any], expected: list[int]) -> None:
    assert sorted(await _search(lot, filters=filters)) == expected


@pytest.mark.parametrize(
    ("sort", "descending", "expected"),
    [
        (SortField.PRICE, False, [4, 5, 1, 3, 2, 6]),
        (SortField.PRICE, True, [6, 2, 3, 1, 5, 4]),
        (SortField.YEAR, True, [2, 6, 3, 1, 4, 5]),  # 3 and 6 are both 2022: id descending too
        (SortField.YEAR, False, [5, 4, 1, 3, 6, 2]),
        (SortField.MILEAGE, False, [2, 3, 6, 1, 4, 5]),
        (SortField.MAKE, False, [6, 4, 5, 1, 2, 3]),
        (SortField.MODEL, False, [1, 2, 4, 5, 6, 3]),
        (SortField.STOCK, True, [6, 5, 4, 3, 2, 1]),
        (None, False, [1, 2, 3, 4, 5, 6]),
    ],
)
async def test_search_sorts_with_a_stable_tiebreak_on_id_in_the_sort_direction(
    lot: SqlStore, sort: SortField | None, descending: bool, expected: list[int]
) -> None:
    assert await _search(lot, sort=sort, descending=descending) == expected


async def test_search_sorts_missing_list_prices_last_in_both_directions(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1, list_price=Money.of(2_000_000)))
        await uow.inventory.upsert(vehicle(2))
        await uow.inventory.upsert(vehicle(3, list_price=Money.of(1_000_000)))
    assert await _search(store, sort=SortField.LIST_PRICE) == [3, 1, 2]
    assert await _search(store, sort=SortField.LIST_PRICE, descending=True) == [1, 3, 2]


async def test_search_sorts_by_last_verified_at(store: SqlStore) -> None:
    async with store.transaction() as uow:
        for n, hours in ((1, 5), (2, 1), (3, 3)):
            await uow.inventory.upsert(vehicle(n, last_verified_at=T0 + timedelta(hours=hours)))
    assert await _search(store, sort=SortField.LAST_VERIFIED_AT, descending=True) == [1, 3, 2]


async def test_search_pages_with_offset_and_limit_and_reports_the_total(lot: SqlStore) -> None:
    pages = []
    for offset in (0, 2, 4, 6):
        query = InventoryQuery(dealership_id=DEALER, sort=SortField.PRICE, offset=offset, limit=2)
        async with lot.transaction() as uow:
            pages.append(await uow.inventory.search(query))
    assert [[v.id.rsplit("-", 1)[1] for v in p.items] for p in pages] == [["4", "5"], ["1", "3"], ["2", "6"], []]
    assert {p.total for p in pages} == {6}
    async with lot.transaction() as uow:  # a later compact page counts the whole set too
        cards = await uow.inventory.search_cards(
            InventoryQuery(dealership_id=DEALER, sort=SortField.PRICE, offset=2, limit=2)
        )
    assert ([c.id.rsplit("-", 1)[1] for c in cards.items], cards.total) == (["1", "3"], 6)
    assert [p.has_more for p in pages] == [True, True, False, False]


async def test_search_total_counts_the_whole_filtered_set(lot: SqlStore) -> None:
    query = InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(make=("toyota",)), limit=1)
    async with lot.transaction() as uow:
        page = await uow.inventory.search(query)
    assert (len(page.items), page.total, page.offset, page.limit) == (1, 3, 0, 1)


async def test_facets_count_terms_and_ranges_over_the_matching_set(lot: SqlStore) -> None:
    async with lot.transaction() as uow:
        facets = await uow.inventory.facets(InventoryQuery(dealership_id=DEALER))
    assert facets.total == 6
    terms = {name: {fc.value: fc.count for fc in counts} for name, counts in facets.terms.items()}
    assert terms["make"] == {"Toyota": 3, "Honda": 2, "Ford": 1}
    assert [fc.value for fc in facets.terms["make"]] == ["Toyota", "Honda", "Ford"]
    assert terms["model"] == {"Camry": 2, "RAV4": 1, "Civic": 1, "CR-V": 1, "F-150": 1}
    assert terms["body"] == {"Sedan": 3, "SUV": 2, "Truck": 1}
    assert terms["condition"] == {"used": 4, "new": 1, "cpo": 1}
    assert terms["exterior_color"] == {"Silver": 4, "Red": 1, "Blue": 1}
    assert set(facets.terms) == {
        "make",
        "model",
        "trim",
        "body",
        "fuel",
        "transmission",
        "driveline",
        "exterior_color",
        "condition",
    }
    assert facets.ranges["year"].model_dump() == {"min": 2019, "max": 2023}
    assert facets.ranges["price"].model_dump() == {"min": 2_000_000, "max": 4_500_000}
    assert facets.ranges["mileage"].model_dump() == {"min": 5_000, "max": 55_000}


async def test_facets_follow_the_filters_and_exclude_sold_units(lot: SqlStore) -> None:
    query = InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(make=("toyota",)))
    async with lot.transaction() as uow:
        facets = await uow.inventory.facets(query)
    assert facets.total == 3
    assert {fc.value: fc.count for fc in facets.terms["trim"]} == {"LE": 1, "XSE": 1, "XLE": 1}
    assert facets.ranges["price"].model_dump() == {"min": 2_400_000, "max": 3_100_000}


async def test_facets_of_an_empty_set_have_zero_total_and_no_ranges(lot: SqlStore) -> None:
    query = InventoryQuery(dealership_id=DEALER, filters=InventoryFilters(make=("tesla",)))
    async with lot.transaction() as uow:
        facets = await uow.inventory.facets(query)
    assert facets.total == 0
    assert all(counts == [] for counts in facets.terms.values())
    assert facets.ranges["year"].model_dump() == {"min": None, "max": None}
