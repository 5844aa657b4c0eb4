"""events.list through the dealer-data adapter on SQLite: a signed, dealership-scoped change feed."""

from __future__ import annotations

from typing import Any

import pytest

from forecourt.errors import ForecourtError

from .builders import OTHER, vehicle
from .conftest import Harness


async def changes(harness: Harness) -> None:
    async with harness.store.transaction() as uow:
        for n in range(1, 4):
            await uow.inventory.upsert(vehicle(n))
        await uow.inventory.upsert(vehicle(1, dealership_id=OTHER))
    await harness.call("leads.create", {"customer": {"first_name": "Ana", "email": "ana@example.com"}})


async def drain(harness: Harness, payload: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    items: list[dict[str, Any]] = []
    page = await harness.call("events.list", payload)
    items += page["items"]
    while "next_cursor" in page:
        page = await harness.call("events.list", {**payload, "cursor": page["next_cursor"]})
        items += page["items"]
    return items, page["resume_cursor"]


async def test_events_replay_the_dealerships_changes_oldest_first(harness: Harness) -> None:
    await changes(harness)
    items, _ = await drain(harness, {"limit": 2})
    assert [(e["resource_type"], e["change_type"]) for e in items] == [
        ("vehicle", "created"),
        ("vehicle", "created"),
        ("vehicle", "created"),
        ("customer", "created"),
        ("lead", "created"),
    ]
    assert {e["dealership_id"] for e in items} == {"dealer-a"}
    assert len({e["event_id"] for e in items}) == 5


async def test_events_can_be_filtered_by_resource_type(harness: Harness) -> None:
    await changes(harness)
    items, _ = await drain(harness, {"resource_type": "lead", "limit": 1})
    assert [e["resource_type"] for e in items] == ["lead"]


async def test_the_resume_cursor_returns_only_newer_events(harness: Harness) -> None:
    await changes(harness)
    _, resume = await drain(harness, {})
    quiet = await harness.call("events.list", {"cursor": resume})
    assert quiet["items"] == []
    assert "next_cursor" not in quiet
    await harness.call("leads.create", {"customer": {"first_name": "Bo", "email": "bo@example.com"}})
    fresh = await harness.call("events.list", {"cursor": quiet["resume_cursor"]})
    assert [e["resource_type"] for e in fresh["items"]] == ["customer", "lead"]


async def test_an_events_cursor_is_bound_to_the_dealership_and_filter(harness: Harness) -> None:
    await changes(harness)
    page = await harness.call("events.list", {"limit": 1})
    attempts: list[tuple[dict[str, Any], str]] = [
        ({"cursor": page["next_cursor"]}, OTHER),
        ({"cursor": page["next_cursor"], "resource_type": "lead"}, "dealer-a"),
        ({"cursor": "eyJvIjoyNX0"}, "dealer-a"),
    ]
    for payload, dealer in attempts:
        with pytest.raises(ForecourtError) as info:
            await harness.call("events.list", payload, dealership_id=dealer)
        assert info.value.code == "invalid_cursor"


async def test_events_carry_no_customer_data(harness: Harness) -> None:
    await changes(harness)
    items, _ = await drain(harness, {})
    assert "ana@example.com" not in repr(items)
