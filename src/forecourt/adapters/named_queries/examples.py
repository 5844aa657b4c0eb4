"""The example named queries shipped with Forecourt (installed for the demo companies)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from forecourt.domain.named_queries import NamedQuery
from forecourt.store.base import Store

EXAMPLES: tuple[dict[str, Any], ...] = (
    {
        "id": "leads_by_source_this_week",
        "description": "Leads received this week (Monday to now, dealership time), per source.",
        "base": "leads",
        "params": {
            "window": {"type": "window", "default": "this_week", "description": "Calendar window."},
            "status": {"type": "string", "description": "Only leads in this status."},
        },
        "time_window": {"column": "created_at", "window": {"param": "window"}},
        "filters": [{"column": "status", "op": "eq", "value": {"param": "status"}}],
        "group_by": [{"column": "source"}],
        "aggregates": [{"fn": "count", "as": "leads"}],
        "order_by": [{"key": "leads", "dir": "desc"}, {"key": "source"}],
    },
    {
        "id": "aged_inventory",
        "description": "Vehicles on sale by days in stock (0-29, 30-59, 60-89, 90+), with average price.",
        "base": "vehicles",
        "params": {
            "condition": {"type": "string", "enum": ["new", "used", "cpo"], "description": "Only this condition."},
        },
        "filters": [
            {"column": "status", "op": "in", "value": ["available", "in_transit", "pending"]},
            {"column": "condition", "op": "eq", "value": {"param": "condition"}},
        ],
        "group_by": [{"column": "days_in_stock", "bands": [30, 60, 90], "as": "age_band"}],
        "aggregates": [
            {"fn": "count", "as": "vehicles"},
            {"fn": "avg", "column": "price_minor", "as": "avg_price_minor"},
            {"fn": "max", "column": "days_in_stock", "as": "max_days"},
        ],
        "order_by": [{"key": "age_band"}],
    },
    {
        "id": "service_lane_load",
        "description": "Service appointments per local day over the coming days (not cancelled).",
        "base": "appointments",
        "params": {"window": {"type": "window", "default": "next_7_days"}},
        "time_window": {"column": "starts_at", "window": {"param": "window"}},
        "filters": [
            {"column": "kind", "op": "eq", "value": "service"},
            {"column": "status", "op": "not_in", "value": ["cancelled", "no_show"]},
        ],
        "group_by": [{"column": "starts_at", "bucket": "day", "as": "day"}],
        "aggregates": [
            {"fn": "count", "as": "appointments"},
            {"fn": "count_distinct", "column": "advisor_id", "as": "advisors"},
        ],
        "order_by": [{"key": "day"}],
    },
    {
        "id": "repair_orders_per_day",
        "description": "Repair orders opened per local day, with their total value.",
        "base": "repair_orders",
        "params": {"window": {"type": "window", "default": "last_30_days"}},
        "time_window": {"column": "opened_at", "window": {"param": "window"}},
        "group_by": [{"column": "opened_at", "bucket": "day", "as": "day"}],
        "aggregates": [
            {"fn": "count", "as": "repair_orders"},
            {"fn": "sum", "column": "total_minor", "as": "total_minor"},
        ],
        "order_by": [{"key": "day"}],
    },
)


def example_queries() -> list[NamedQuery]:
    """The examples as validated definitions."""
    return [NamedQuery.model_validate(e) for e in EXAMPLES]


async def install_examples(store: Store, company_id: str, *, now: datetime | None = None) -> int:
    """Define the examples for a company unless it has queries with those ids; returns how many were added."""
    added = 0
    async with store.transaction() as uow:
        repo = uow.named_queries
        for query in example_queries():
            if await repo.get(company_id, query.id) is None:
                await repo.upsert(company_id, query, now or datetime.now(UTC))
                added += 1
    return added
