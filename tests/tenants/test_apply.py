"""Applying a tenants file, on SQLite and on PostgreSQL: plan, idempotence, all-or-nothing, prune, round trip."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from forecourt.actions.tenants_apply import apply_tenants, export_profile
from forecourt.domain.tenancy import Company, Dealership, Profile
from forecourt.domain.tenants_file import dump_tenants
from forecourt.errors import TenantInUse, TenantsFileInvalid
from forecourt.store import SqlStore

from .conftest import example


async def _apply(store: SqlStore, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    async with store.transaction() as uow:
        plan = await apply_tenants(uow, copy.deepcopy(data), **kwargs)
    return {"summary": plan.summary(), "steps": [s.as_dict() for s in plan.steps], "changes": plan.changes}


async def _rooftops(store: SqlStore) -> dict[str, Dealership]:
    async with store.read() as uow:
        return {d.id: d for d in await uow.tenancy.list_dealerships()}


async def test_a_first_apply_creates_everything_and_a_second_changes_nothing(store: SqlStore) -> None:
    first = await _apply(store, example())
    assert first["summary"] == {"create": 10, "change": 0, "unchanged": 0, "delete": 0}
    assert set(await _rooftops(store)) == {
        "lonestar-toyota-austin",
        "lonestar-honda-roundrock",
        "lonestar-used-sanmarcos",
    }
    again = await _apply(store, example())
    assert again["changes"] == 0
    assert again["summary"]["unchanged"] == 10


async def test_a_dry_run_plans_without_writing(store: SqlStore) -> None:
    plan = await _apply(store, example(), dry_run=True)
    assert plan["summary"]["create"] == 10
    assert await _rooftops(store) == {}


async def test_an_edit_is_planned_as_a_change_naming_the_fields(store: SqlStore) -> None:
    await _apply(store, example())
    edited = example()
    edited["companies"][0]["rooftops"][0]["public_agent"] = False
    edited["companies"][0]["rooftops"][0]["crm"] = {"endpoint": "https://crm.example/adf"}
    plan = await _apply(store, edited)
    changes = [s for s in plan["steps"] if s["op"] == "change"]
    assert changes == [
        {
            "op": "change",
            "kind": "dealership",
            "id": "lonestar-toyota-austin",
            "company_id": "lonestar-motors",
            "fields": ["public_agent", "crm_endpoint"],
        }
    ]
    rooftop = (await _rooftops(store))["lonestar-toyota-austin"]
    assert rooftop.public_agent is False
    assert rooftop.crm_endpoint == "https://crm.example/adf"


async def test_a_file_colliding_with_another_company_is_refused_whole_with_paths(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.tenancy.upsert_profile(Profile(id="other", name="Other"))
        await uow.tenancy.upsert_company(Company(id="other-co", profile_id="other", name="Other"))
        await uow.tenancy.upsert_dealership(
            Dealership(id="lonestar-honda-roundrock", company_id="other-co", name="Taken", domain="x.example")
        )
    data = example()
    data["companies"][0]["rooftops"][0]["domain"] = "x.example"
    with pytest.raises(TenantsFileInvalid) as caught:
        await _apply(store, data)
    paths = {e["path"] for e in caught.value.details["errors"]}
    assert paths == {"companies[0].rooftops[0].domain", "companies[0].rooftops[1].id"}
    assert caught.value.code == "tenants.invalid_file"
    assert set(await _rooftops(store)) == {"lonestar-honda-roundrock"}  # nothing of the file was written


async def test_nothing_is_deleted_without_prune(store: SqlStore) -> None:
    await _apply(store, example())
    smaller = example()
    smaller["companies"][0]["rooftops"].pop()
    smaller["companies"][0]["members"] = [smaller["companies"][0]["members"][0]]
    smaller["companies"][0]["members"][0]["dealerships"] = ["lonestar-toyota-austin"]
    plan = await _apply(store, smaller)
    assert plan["summary"]["delete"] == 0
    assert len(await _rooftops(store)) == 3


async def test_prune_deletes_what_the_file_leaves_out(store: SqlStore) -> None:
    await _apply(store, example())
    smaller = example()
    smaller["companies"][0]["rooftops"].pop()
    del smaller["companies"][0]["members"][1:]
    del smaller["companies"][0]["adapters"]
    plan = await _apply(store, smaller, prune=True)
    deleted = {(s["kind"], s["id"]) for s in plan["steps"] if s["op"] == "delete"}
    assert deleted == {
        ("dealership", "lonestar-used-sanmarcos"),
        ("member", "bdc-agent"),
        ("member", "it-admin"),
        ("adapter_setting", "vertex"),
    }
    assert "lonestar-used-sanmarcos" not in await _rooftops(store)
    async with store.read() as uow:
        assert [m.id for m in await uow.tenancy.list_members("lonestar-motors")] == ["shopper-agent"]


async def test_prune_of_a_rooftop_holding_data_refuses_the_whole_apply(store: SqlStore) -> None:
    from forecourt.domain.people import Customer

    await _apply(store, example())
    now = datetime(2026, 11, 1, tzinfo=UTC)
    async with store.transaction() as uow:
        await uow.customers.add(
            Customer(id="c1", dealership_id="lonestar-used-sanmarcos", first_name="A", created_at=now, updated_at=now)
        )
    smaller = example()
    smaller["companies"][0]["rooftops"].pop()
    smaller["companies"][0]["members"][1]["dealerships"] = ["lonestar-toyota-austin"]
    smaller["companies"][0]["members"][2]["dealerships"] = ["lonestar-toyota-austin"]
    smaller["companies"][0]["rooftops"][0]["name"] = "Renamed in the same apply"
    with pytest.raises(TenantInUse) as caught:
        await _apply(store, smaller, prune=True)
    assert caught.value.code == "tenancy.in_use"
    rooftops = await _rooftops(store)
    assert "lonestar-used-sanmarcos" in rooftops
    assert rooftops["lonestar-toyota-austin"].name == "Lone Star Toyota of Austin"  # rolled back with it


async def test_an_export_applies_back_with_no_changes(store: SqlStore) -> None:
    await _apply(store, example())
    async with store.read() as uow:
        exported = dump_tenants(await export_profile(uow, "lonestar"))
    assert exported["version"] == 1
    assert exported["profile"]["id"] == "lonestar"
    assert (await _apply(store, exported))["changes"] == 0
