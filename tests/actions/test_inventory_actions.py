"""dealer.information and inventory.* through the dealer-data adapter on SQLite."""

from __future__ import annotations

import pytest

from forecourt.actions.inventory import CARD_FIELDS
from forecourt.contract import paging
from forecourt.domain.vehicle import TOTAL_COUNTED_UP_TO, Condition, VehicleStatus
from forecourt.errors import ForecourtError

from .builders import DEALER, NOW, OTHER, vehicle
from .conftest import Harness


async def stock(harness: Harness) -> None:
    units = [
        vehicle(1, price=2_100_000, mileage=30_000),
        vehicle(2, price=2_900_000, model="RAV4", body="suv", mileage=12_000),
        vehicle(3, price=4_200_000, condition=Condition.NEW, year=2026, model="Highlander", body="suv", mileage=5),
        vehicle(4, price=1_500_000, status=VehicleStatus.SOLD),
        vehicle(5, price=2_300_000, year=2021, mileage=45_000),
        vehicle(1, dealership_id=OTHER, price=999_900),
    ]
    async with harness.store.transaction() as uow:
        for unit in units:
            await uow.inventory.upsert(unit)


async def test_dealer_information_returns_the_profile_with_hours_by_weekday(harness: Harness) -> None:
    info = await harness.call("dealer.information")
    assert info["id"] == DEALER
    assert info["time_zone"] == "America/Los_Angeles"
    assert info["service_hours"]["monday"] == {"open": "07:00", "close": "18:00"}
    assert info["service_hours"]["sunday"] is None
    assert info["phones"]["service"] == "+14155550101"


async def test_dealer_information_for_an_unknown_dealership_is_not_found(harness: Harness) -> None:
    with pytest.raises(ForecourtError) as info:
        await harness.call("dealer.information", dealership_id="nowhere")
    assert info.value.code == "tenancy.dealership_not_found"


async def test_search_returns_only_available_units_of_the_callers_dealership(harness: Harness) -> None:
    await stock(harness)
    page = await harness.call("inventory.search", {})
    assert page["total"] == 4
    assert {v["id"] for v in page["items"]} == {f"veh-{DEALER}-{n}" for n in (1, 2, 3, 5)}
    assert all(v["available"] for v in page["items"])
    assert "next_cursor" not in page


async def test_search_filters_by_price_in_minor_units_and_sorts_by_price(harness: Harness) -> None:
    await stock(harness)
    page = await harness.call(
        "inventory.search",
        {"price_min": 2_200_000, "price_max": 4_000_000, "sort": {"field": "price", "order": "desc"}},
    )
    assert [v["price"] for v in page["items"]] == [
        {"amount_minor": 2_900_000, "currency": "USD"},
        {"amount_minor": 2_300_000, "currency": "USD"},
    ]


async def test_search_by_body_and_condition_uses_any_of_semantics(harness: Harness) -> None:
    await stock(harness)
    page = await harness.call("inventory.search", {"body": ["suv"], "condition": ["new", "cpo"]})
    assert [v["model"] for v in page["items"]] == ["Highlander"]


async def test_search_pages_with_a_cursor_until_the_last_page(harness: Harness) -> None:
    await stock(harness)
    query = {"sort": {"field": "price"}, "limit": 3}
    first = await harness.call("inventory.search", query)
    second = await harness.call("inventory.search", {**query, "cursor": first["next_cursor"]})
    assert len(first["items"]) == 3
    assert len(second["items"]) == 1
    assert "next_cursor" not in second
    assert {v["id"] for v in first["items"]}.isdisjoint(v["id"] for v in second["items"])


async def test_a_compact_search_answers_each_vehicles_card_with_the_same_order_total_and_cursor(
    harness: Harness,
) -> None:
    await stock(harness)
    query = {"sort": {"field": "price", "order": "desc"}, "limit": 2}
    full = await harness.call("inventory.search", query)
    compact = await harness.call("inventory.search", {**query, "view": "compact"})
    assert compact["total"] == full["total"] == 4
    assert compact["items"] == [{k: v[k] for k in CARD_FIELDS} for v in full["items"]]
    assert set(compact["items"][0]) == set(CARD_FIELDS)
    # The view shows the same pages: a compact page's cursor continues a full search, and the other way round.
    rest_full = await harness.call("inventory.search", {**query, "cursor": compact["next_cursor"]})
    rest_compact = await harness.call("inventory.search", {**query, "view": "compact", "cursor": full["next_cursor"]})
    assert rest_compact["items"] == [{k: v[k] for k in CARD_FIELDS} for v in rest_full["items"]]
    assert [v["id"] for v in rest_full["items"]] == [f"veh-{DEALER}-{n}" for n in (5, 1)]


async def test_a_search_says_its_total_is_exact_when_it_counted_every_match(harness: Harness) -> None:
    await stock(harness)
    page = await harness.call("inventory.search", {"limit": 2})
    assert (page["total"], page["total_relation"], len(page["items"])) == (4, "eq", 2)


async def test_a_large_search_reports_a_lower_bound_and_its_cursors_still_reach_every_unit_once(
    harness: Harness,
) -> None:
    many = TOTAL_COUNTED_UP_TO + 30
    async with harness.store.transaction() as uow:
        for n in range(1, many + 1):
            await uow.inventory.upsert(vehicle(n, price=1_000_000 + (n % 7) * 100_000))  # ties: 7 prices
    query = {"sort": {"field": "price"}, "limit": 40, "view": "compact"}
    page = await harness.call("inventory.search", query)
    seen, prices, totals = [], [], []
    while True:
        seen += [v["id"] for v in page["items"]]
        prices += [v["price"]["amount_minor"] for v in page["items"]]
        totals.append((page["total"], page["total_relation"]))
        if "next_cursor" not in page:
            break
        page = await harness.call("inventory.search", {**query, "cursor": page["next_cursor"]})
    assert totals == [(TOTAL_COUNTED_UP_TO, "gte"), (many, "eq"), (many, "eq"), (many, "eq")]
    assert sorted(seen) == sorted(f"veh-{DEALER}-{n}" for n in range(1, many + 1))
    assert prices == sorted(prices)


async def test_a_cursor_without_a_keyset_key_still_resumes_at_its_offset(harness: Harness) -> None:
    # A cursor issued before keyset pages (an offset only) goes on where it left off.
    await stock(harness)
    query = {"sort": {"field": "price"}, "limit": 2}
    first = await harness.call("inventory.search", query)
    offset_only = paging.encode_cursor(
        harness.settings, 2, paging.query_key("inventory.search", DEALER, query), now=NOW
    )
    by_key = await harness.call("inventory.search", {**query, "cursor": first["next_cursor"]})
    by_offset = await harness.call("inventory.search", {**query, "cursor": offset_only})
    assert [v["id"] for v in by_offset["items"]] == [v["id"] for v in by_key["items"]]
    assert [v["id"] for v in by_key["items"]] == [f"veh-{DEALER}-{n}" for n in (2, 3)]


async def test_a_search_cursor_cannot_be_replayed_on_another_dealership_or_filter(harness: Harness) -> None:
    await stock(harness)
    first = await harness.call("inventory.search", {"limit": 1})
    for payload, dealer in (({"limit": 1}, OTHER), ({"limit": 1, "body": ["suv"]}, DEALER)):
        with pytest.raises(ForecourtError) as info:
            await harness.call("inventory.search", {**payload, "cursor": first["next_cursor"]}, dealership_id=dealer)
        assert info.value.code == "invalid_cursor"


async def test_sold_units_are_only_listed_when_their_status_is_asked_for(harness: Harness) -> None:
    await stock(harness)
    page = await harness.call("inventory.search", {"status": ["sold"]})
    assert [(v["id"], v["status"], v["available"]) for v in page["items"]] == [(f"veh-{DEALER}-4", "sold", False)]


async def test_get_finds_a_vehicle_by_id_vin_or_stock_with_industry_ids_as_fields(harness: Harness) -> None:
    await stock(harness)
    unit = vehicle(2)
    for payload in ({"vehicle_id": unit.id}, {"vin": unit.vin.lower()}, {"stock": unit.stock}):
        found = await harness.call("inventory.get", payload)
        assert (found["id"], found["vin"], found["stock"]) == (unit.id, unit.vin, unit.stock)
        assert found["mileage"] == {"value": 12_000, "unit": "mi"}
        assert found["last_verified_at"].endswith("+00:00")


async def test_get_never_reaches_another_dealerships_vehicle(harness: Harness) -> None:
    await stock(harness)
    with pytest.raises(ForecourtError) as info:
        await harness.call("inventory.get", {"vehicle_id": f"veh-{OTHER}-1"})
    assert info.value.code == "inventory.vehicle_not_found"


async def test_facets_count_terms_and_range_prices_over_the_matching_set(harness: Harness) -> None:
    await stock(harness)
    facets = await harness.call("inventory.facets", {"make": ["Toyota"]})
    assert facets["total"] == 4
    models = {t["value"]: t["count"] for t in facets["terms"]["model"]}
    assert models == {"Camry": 2, "RAV4": 1, "Highlander": 1}
    assert facets["ranges"]["price"] == {"min": 2_100_000, "max": 4_200_000}
