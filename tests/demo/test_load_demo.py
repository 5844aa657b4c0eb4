"""load_demo and generate_bulk against the real store: the named tenants, idempotence, bulk batches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from forecourt.demo import DemoSize, generate_bulk, load_demo
from forecourt.demo.bulk import BULK_COMPANY
from forecourt.domain.vehicle import InventoryFilters, InventoryQuery
from forecourt.domain.vin import normalize_vin
from forecourt.store import SqlStore

NOW = datetime(2026, 11, 20, 17, 45, tzinfo=UTC)
SMALL = DemoSize(customers=12, leads=8, repair_orders=6, service_appointments=6)
ROOFTOPS = ("demo-toyota-sf", "demo-honda-oak", "demo-bay-sj")


async def _snapshot(store: SqlStore) -> dict[str, object]:
    async with store.transaction() as uow:
        vehicles = []
        for rooftop in ROOFTOPS:
            query = InventoryQuery(
                dealership_id=rooftop, filters=InventoryFilters(include_unavailable=True), limit=1000
            )
            vehicles.append((await uow.inventory.search(query)).items)
        customers = [await uow.customers.page(r, 0, 1000) for r in ROOFTOPS]
        leads = [await uow.leads.page(r, 0, 1000) for r in ROOFTOPS]
        ros = [await uow.service.list_repair_orders(r, 0, 1000) for r in ROOFTOPS]
        return {
            "vehicles": vehicles,
            "customers": customers,
            "leads": leads,
            "repair_orders": ros,
            "outbox": await uow.outbox.last_seq(),
        }


async def test_the_demo_tenants_are_loaded_with_their_named_ids(store: SqlStore) -> None:
    report = await load_demo(store, vehicles_per_dealership=20, seed=5, now=NOW, size=SMALL)
    assert report.created["vehicles"] == 60
    async with store.transaction() as uow:
        companies = {c.id for c in await uow.tenancy.list_companies()}
        group = {d.id for d in await uow.tenancy.list_dealerships("demo-motor-group")}
        bay = {d.id for d in await uow.tenancy.list_dealerships("demo-bay-autos")}
        members = {m.id for m in await uow.tenancy.list_members("demo-motor-group")}
        bay_members = {m.id for m in await uow.tenancy.list_members("demo-bay-autos")}
        by_domain = await uow.tenancy.get_dealership_by_domain("toyota-sf.demo.forecourt.example")
        policies = await uow.tenancy.list_policies("demo-bay-autos")
        slots = await uow.service.list_slots("demo-honda-oak", NOW, NOW + timedelta(days=14))
    assert {"demo-motor-group", "demo-bay-autos"} <= companies
    assert group == {"demo-toyota-sf", "demo-honda-oak"}
    assert bay == {"demo-bay-sj"}
    assert members == {"shopper-agent", "crm-agent", "ops-admin"}
    assert bay_members == {"bay-crm-agent"}
    assert by_domain is not None
    assert by_domain.id == "demo-toyota-sf"
    assert len(policies) == 1
    assert len(slots) > 100


async def test_loading_the_demo_twice_changes_nothing(store: SqlStore) -> None:
    await load_demo(store, vehicles_per_dealership=20, seed=5, now=NOW, size=SMALL)
    before = await _snapshot(store)
    again = await load_demo(store, vehicles_per_dealership=20, seed=5, now=NOW, size=SMALL)
    assert again.changed == 0
    assert await _snapshot(store) == before


async def test_reloading_later_refreshes_only_stale_verification_and_adds_new_slots(store: SqlStore) -> None:
    await load_demo(store, vehicles_per_dealership=10, seed=5, now=NOW, size=SMALL)
    report = await load_demo(store, vehicles_per_dealership=10, seed=5, now=NOW + timedelta(days=2), size=SMALL)
    assert report.updated["vehicles"] == 30
    assert report.created["vehicles"] == 0
    assert report.created["customers"] == 0
    assert report.created["slots"] > 0


async def test_the_same_seed_loads_the_same_vins_and_prices_into_any_store(store: SqlStore) -> None:
    await load_demo(store, vehicles_per_dealership=15, seed=99, now=NOW, size=SMALL)
    from forecourt.demo.inventory import generate_vehicles
    from forecourt.demo.tenants import ROOFTOP_PLANS, dealership

    expected = generate_vehicles(dealership("demo-bay-sj"), ROOFTOP_PLANS["demo-bay-sj"], 15, seed=99, now=NOW)
    async with store.transaction() as uow:
        for vehicle in expected:
            stored = await uow.inventory.get_by_vin("demo-bay-sj", vehicle.vin)
            assert stored is not None
            assert normalize_vin(stored.vin) == stored.vin
            assert (stored.id, stored.price, stored.msrp, stored.stock) == (
                vehicle.id, vehicle.price, vehicle.msrp, vehicle.stock,
            )  # fmt: skip


async def test_bulk_generation_writes_every_batch_and_reports_progress(store: SqlStore) -> None:
    calls: list[tuple[int, int]] = []
    report = await generate_bulk(
        store,
        dealerships=7,
        vehicles_per_dealership=150,
        seed=3,
        now=NOW,
        batch_size=400,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert (report.dealerships, report.vehicles) == (7, 1050)
    assert calls[0] == (0, 1050)
    assert calls[-1] == (1050, 1050)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    async with store.transaction() as uow:
        assert await uow.inventory.count("bench-0007") == 150
        assert len(await uow.tenancy.list_dealerships(BULK_COMPANY)) == 7
    again = await generate_bulk(store, dealerships=7, vehicles_per_dealership=150, seed=3, now=NOW, batch_size=400)
    assert again.vehicles == 1050
    async with store.transaction() as uow:
        assert await uow.inventory.count() == 1050
