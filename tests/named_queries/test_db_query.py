"""``db.query``: the example reports, dealership scoping, parameters and injection attempts, on both databases."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from forecourt.domain.errors import InvalidQuery, InvalidQueryParams, QueryNotFound
from forecourt.store.sql.tables import leads, vehicles

from .conftest import NOW, Harness

MOTOR, TOYOTA, HONDA, BAY_SJ = "demo-motor-group", "demo-toyota-sf", "demo-honda-oak", "demo-bay-sj"


async def _count(harness: Harness, stmt: sa.Select[tuple[int]]) -> int:
    async with harness.store.transaction() as uow:
        return int((await uow.connection.execute(stmt)).scalar_one())  # type: ignore[attr-defined]


async def test_leads_by_source_this_week_counts_only_this_dealerships_leads_since_monday(harness: Harness) -> None:
    out = await harness.call("db.query", {"query_id": "leads_by_source_this_week"}, dealership_id=TOYOTA)
    assert [c["name"] for c in out["columns"]] == ["source", "leads"]
    assert out["window"]["name"] == "this_week"
    assert out["window"]["start"] == "2026-03-02T08:00:00+00:00"  # Monday 00:00 in Los Angeles
    counts = [r["leads"] for r in out["rows"]]
    assert counts == sorted(counts, reverse=True)
    start = sa.literal(NOW.replace(day=2, hour=8))
    expected = await _count(
        harness,
        sa.select(sa.func.count()).where(leads.c.dealership_id == TOYOTA, leads.c.created_at >= start),
    )
    assert sum(counts) == expected


async def test_aged_inventory_puts_every_vehicle_on_sale_in_one_age_band(harness: Harness) -> None:
    out = await harness.call("db.query", {"query_id": "aged_inventory"}, dealership_id=HONDA)
    bands = {r["age_band"]: r for r in out["rows"]}
    assert set(bands) <= {"0-29", "30-59", "60-89", "90+"}
    on_sale = await _count(
        harness,
        sa.select(sa.func.count()).where(
            vehicles.c.dealership_id == HONDA, vehicles.c.status.in_(["available", "in_transit", "pending"])
        ),
    )
    assert sum(r["vehicles"] for r in out["rows"]) == on_sale
    prices = [r["avg_price_minor"] for r in out["rows"]]
    assert prices
    assert all(set(p) == {"amount_minor", "currency"} for p in prices)
    assert all(type(p["amount_minor"]) is int and p["currency"] == "USD" for p in prices)
    assert {"name": "avg_price_minor", "type": "money", "currency": "USD"} in out["columns"]


async def test_aged_inventory_takes_an_enumerated_condition_parameter(harness: Harness) -> None:
    used = await harness.call(
        "db.query", {"query_id": "aged_inventory", "params": {"condition": "used"}}, dealership_id=TOYOTA
    )
    every = await harness.call("db.query", {"query_id": "aged_inventory"}, dealership_id=TOYOTA)
    assert sum(r["vehicles"] for r in used["rows"]) <= sum(r["vehicles"] for r in every["rows"])
    with pytest.raises(InvalidQueryParams) as caught:
        await harness.call(
            "db.query", {"query_id": "aged_inventory", "params": {"condition": "salvage"}}, dealership_id=TOYOTA
        )
    assert caught.value.code == "reports.invalid_params"


async def test_service_lane_load_counts_service_appointments_per_local_day(harness: Harness) -> None:
    out = await harness.call(
        "db.query", {"query_id": "service_lane_load", "params": {"window": "next_14_days"}}, dealership_id=TOYOTA
    )
    days = [r["day"] for r in out["rows"]]
    assert days == sorted(days)
    assert all(len(d) == 10 and d >= "2026-03-04" for d in days)
    assert all(r["appointments"] >= 1 for r in out["rows"])


async def test_repair_orders_per_day_sums_totals_in_minor_units(harness: Harness) -> None:
    out = await harness.call("db.query", {"query_id": "repair_orders_per_day"}, dealership_id=HONDA)
    assert out["rows"]
    assert all(type(r["total_minor"]["amount_minor"]) is int for r in out["rows"])
    assert all(r["total_minor"]["currency"] == "USD" for r in out["rows"])


async def test_another_dealerships_rows_never_appear(harness: Harness) -> None:
    definition = {
        "id": "all_stock",
        "base": "vehicles",
        "select": ["stock", "make"],
        "filters": [{"column": "status", "op": "ne", "value": "removed"}],
        "limit": 1000,
    }
    await harness.call("admin.queries.upsert", {"company_id": MOTOR, "query": definition})
    out = await harness.call("db.query", {"query_id": "all_stock"}, dealership_id=TOYOTA)
    assert out["rows"]
    assert {r["make"] for r in out["rows"]} == {"Toyota"}
    assert all(r["stock"].startswith("T") for r in out["rows"])


async def test_a_companys_queries_are_invisible_to_another_company(harness: Harness) -> None:
    definition = {"id": "motor_only", "base": "leads", "aggregates": [{"fn": "count", "as": "n"}]}
    await harness.call("admin.queries.upsert", {"company_id": MOTOR, "query": definition})
    with pytest.raises(QueryNotFound) as caught:
        await harness.call("db.query", {"query_id": "motor_only"}, dealership_id=BAY_SJ)
    assert caught.value.code == "reports.query_not_found"


async def test_a_crafted_parameter_is_bound_as_a_value_and_cannot_escape(harness: Harness) -> None:
    payloads = ["'; DROP TABLE leads; --", "website' OR '1'='1", 'x") UNION SELECT vin FROM vehicles --']
    for payload in payloads:
        out = await harness.call(
            "db.query", {"query_id": "leads_by_source_this_week", "params": {"status": payload}}, dealership_id=TOYOTA
        )
        assert out["rows"] == []
    assert await _count(harness, sa.select(sa.func.count()).select_from(leads)) > 0


async def test_definitions_cannot_name_columns_outside_the_view(harness: Harness) -> None:
    attempts = [
        {"id": "bad1", "base": "leads", "select": ["message"]},
        {"id": "bad2", "base": "leads", "select": ["dealership_id"]},
        {"id": "bad3", "base": "vehicles", "select": ["stock; DROP TABLE vehicles"]},
        {"id": "bad4", "base": "customers", "select": ["email"]},
        {
            "id": "bad5",
            "base": "leads",
            "group_by": [{"column": "source"}],
            "order_by": [{"key": "nope"}],
            "aggregates": [{"fn": "count", "as": "n"}],
        },
        {"id": "bad6", "base": "leads", "aggregates": [{"fn": "sum", "column": "source", "as": "s"}]},
        {
            "id": "bad7",
            "base": "leads",
            "select": ["source"],
            "filters": [{"column": "status", "op": "eq", "value": {"param": "undeclared"}}],
        },
    ]
    for definition in attempts:
        with pytest.raises(InvalidQuery) as caught:
            await harness.call("admin.queries.upsert", {"company_id": MOTOR, "query": definition})
        assert caught.value.code == "reports.invalid_query", definition


async def test_unknown_and_mistyped_parameters_are_refused(harness: Harness) -> None:
    for params in ({"nope": 1}, {"window": "forever"}, {"status": 5}):
        with pytest.raises(InvalidQueryParams) as caught:
            await harness.call(
                "db.query", {"query_id": "leads_by_source_this_week", "params": params}, dealership_id=TOYOTA
            )
        assert caught.value.code == "reports.invalid_params"


async def test_admins_list_upsert_and_delete_queries(harness: Harness) -> None:
    listed = await harness.call("admin.queries.list", {"company_id": MOTOR})
    assert {"leads_by_source_this_week", "aged_inventory", "service_lane_load"} <= {q["id"] for q in listed["items"]}
    definition = {
        "id": "open_ros",
        "description": "Open repair orders by advisor",
        "base": "repair_orders",
        "params": {"min_days": {"type": "integer", "default": 0}},
        "filters": [{"column": "days_open", "op": "gte", "value": {"param": "min_days"}}],
        "group_by": [{"column": "advisor_id"}],
        "aggregates": [{"fn": "count", "as": "n"}, {"fn": "avg", "column": "days_open", "as": "avg_days"}],
    }
    created = await harness.call("admin.queries.upsert", {"company_id": MOTOR, "query": definition})
    assert created["created"] is True
    again = await harness.call("admin.queries.upsert", {"company_id": MOTOR, "query": definition})
    assert again["created"] is False
    out = await harness.call("db.query", {"query_id": "open_ros", "params": {"min_days": 1}}, dealership_id=TOYOTA)
    assert all(r["avg_days"] >= 1 for r in out["rows"])
    assert (await harness.call("admin.queries.delete", {"company_id": MOTOR, "query_id": "open_ros"})) == {
        "deleted": True
    }
