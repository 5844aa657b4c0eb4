"""Inventory repository contract: reads, upserts, status changes, comparables and their outbox events."""

from __future__ import annotations

from datetime import timedelta

import pytest

from forecourt.domain.events import ChangeType, ResourceType
from forecourt.domain.money import Money
from forecourt.domain.vehicle import InventoryFilters, InventoryQuery, VehicleStatus
from forecourt.errors import AlreadyExists, ForecourtError, VehicleNotFound
from forecourt.store import SqlStore

from .factories import DEALER, OTHER_DEALER, T0, vehicle, vin


async def test_upsert_creates_then_reads_back_the_same_vehicle(store: SqlStore) -> None:
    original = vehicle(1, msrp=Money.of(3_000_000), list_price=Money.of(2_700_000), photos=("https://x/1.jpg",))
    async with store.transaction() as uow:
        created = await uow.inventory.upsert(original)
    async with store.transaction() as uow:
        by_id = await uow.inventory.get(DEALER, original.id)
        by_vin = await uow.inventory.get_by_vin(DEALER, original.vin.lower())
        by_stock = await uow.inventory.get_by_stock(DEALER, original.stock.lower())
    assert created is True
    assert by_id is not None
    assert by_id.model_dump(exclude={"created_at", "updated_at"}) == original.model_dump(
        exclude={"created_at", "updated_at"}
    )
    assert by_id.created_at is not None
    assert by_vin == by_id
    assert by_stock == by_id


async def test_get_returns_none_for_unknown_vehicle_or_other_dealership(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    async with store.transaction() as uow:
        assert await uow.inventory.get(DEALER, "nope") is None
        assert await uow.inventory.get(OTHER_DEALER, vehicle(1).id) is None
        assert await uow.inventory.get_by_vin(OTHER_DEALER, vin(1)) is None
        assert await uow.inventory.get_by_stock(DEALER, "missing") is None


async def test_upsert_is_idempotent_and_emits_no_event_for_unchanged_vehicle(store: SqlStore) -> None:
    async with store.transaction() as uow:
        first = await uow.inventory.upsert(vehicle(1))
    async with store.transaction() as uow:
        again = await uow.inventory.upsert(vehicle(1, last_verified_at=T0 + timedelta(hours=1)))
        events = await uow.outbox.list_after(0, 100)
        stored = await uow.inventory.get(DEALER, vehicle(1).id)
        count = await uow.inventory.count(DEALER)
    assert (first, again) == (True, False)
    assert [e.change_type for e in events] == [ChangeType.CREATED]
    assert count == 1
    assert stored is not None
    assert stored.last_verified_at == T0 + timedelta(hours=1)


async def test_upsert_by_vin_keeps_the_existing_id_and_emits_an_update(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    async with store.transaction() as uow:
        created = await uow.inventory.upsert(vehicle(1, id="another-id", price=2_400_000))
        events = await uow.outbox.list_after(0, 100)
        stored = await uow.inventory.get_by_vin(DEALER, vin(1))
    assert created is False
    assert stored is not None
    assert stored.id == vehicle(1).id
    assert stored.price.amount_minor == 2_400_000
    assert [(e.change_type, e.resource_id) for e in events] == [
        (ChangeType.CREATED, vehicle(1).id),
        (ChangeType.UPDATED, vehicle(1).id),
    ]
    assert events[-1].resource_type is ResourceType.VEHICLE
    assert events[-1].status == "available"


async def test_same_vin_in_two_dealerships_is_two_vehicles(store: SqlStore) -> None:
    async with store.transaction() as uow:
        assert await uow.inventory.upsert(vehicle(1)) is True
        assert await uow.inventory.upsert(vehicle(1, dealership_id=OTHER_DEALER)) is True
        assert await uow.inventory.count() == 2
        assert await uow.inventory.count(OTHER_DEALER) == 1


async def test_mark_unavailable_except_removes_only_offerable_vehicles_missing_from_the_feed(store: SqlStore) -> None:
    at = T0 + timedelta(days=1)
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
        await uow.inventory.upsert(vehicle(2, status=VehicleStatus.IN_TRANSIT))
        await uow.inventory.upsert(vehicle(3))
        await uow.inventory.upsert(vehicle(4, status=VehicleStatus.SOLD))
        await uow.inventory.upsert(vehicle(5, dealership_id=OTHER_DEALER))
        before = await uow.outbox.last_seq()
    async with store.transaction() as uow:
        removed = await uow.inventory.mark_unavailable_except(DEALER, {vin(1).lower()}, at)
        events = await uow.outbox.list_after(before, 100)
        statuses = {n: (await uow.inventory.get_by_vin(DEALER, vin(n))) for n in (1, 2, 3, 4)}
        other = await uow.inventory.get_by_vin(OTHER_DEALER, vin(5))
    assert removed == 2
    assert {n: v.status for n, v in statuses.items() if v} == {
        1: VehicleStatus.AVAILABLE,
        2: VehicleStatus.REMOVED,
        3: VehicleStatus.REMOVED,
        4: VehicleStatus.SOLD,
    }
    assert statuses[3] is not None
    assert statuses[3].updated_at == at
    assert other is not None
    assert other.status is VehicleStatus.AVAILABLE
    assert sorted(e.resource_id for e in events) == [vehicle(2).id, vehicle(3).id]
    assert {(e.change_type.value, e.status) for e in events} == {("deleted", "removed")}


async def test_set_status_sold_stamps_sold_at_and_writes_an_event(store: SqlStore) -> None:
    at = T0 + timedelta(days=2)
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    async with store.transaction() as uow:
        sold = await uow.inventory.set_status(DEALER, vehicle(1).id, "sold", at)
        events = await uow.outbox.list_after(0, 10)
    async with store.transaction() as uow:
        stored = await uow.inventory.get(DEALER, vehicle(1).id)
    assert sold.status is VehicleStatus.SOLD
    assert sold.sold_at == at
    assert stored == sold
    assert (events[-1].change_type, events[-1].status) == (ChangeType.UPDATED, "sold")


async def test_set_status_of_unknown_vehicle_raises_vehicle_not_found(store: SqlStore) -> None:
    with pytest.raises(VehicleNotFound) as caught:
        async with store.transaction() as uow:
            await uow.inventory.set_status(DEALER, "nope", "sold", T0)
    assert caught.value.code == "inventory.vehicle_not_found"


async def test_set_status_rejects_an_unknown_status(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    with pytest.raises(ForecourtError) as caught:
        async with store.transaction() as uow:
            await uow.inventory.set_status(DEALER, vehicle(1).id, "teleported", T0)
    assert caught.value.code == "invalid_params"


async def test_comparables_span_dealerships_and_include_sold_units(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1, year=2020, mileage=30_000))
        await uow.inventory.upsert(vehicle(2, year=2021, status=VehicleStatus.SOLD, dealership_id=OTHER_DEALER))
        await uow.inventory.upsert(vehicle(3, year=2018))
        await uow.inventory.upsert(vehicle(4, year=2020, mileage=90_000))
        await uow.inventory.upsert(vehicle(5, year=2020, model="Corolla"))
        comps = await uow.inventory.comparables("TOYOTA", "camry", 2019, 2022, 50_000)
        unbounded = await uow.inventory.comparables("Toyota", "Camry", 2019, 2022, None)
    assert sorted(v.vin for v in comps) == sorted([vin(1), vin(2)])
    assert len(unbounded) == 3


async def test_count_counts_every_status(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
        await uow.inventory.upsert(vehicle(2, status=VehicleStatus.SOLD))
        assert await uow.inventory.count(DEALER) == 2
        assert await uow.inventory.count(OTHER_DEALER) == 0


async def test_a_rolled_back_transaction_leaves_neither_the_vehicle_nor_its_event(store: SqlStore) -> None:
    class BoomError(Exception):
        pass

    async def write_then_fail() -> None:
        async with store.transaction() as uow:
            await uow.inventory.upsert(vehicle(1))
            assert await uow.outbox.last_seq() > 0
            raise BoomError

    with pytest.raises(BoomError):
        await write_then_fail()
    async with store.transaction() as uow:
        assert await uow.inventory.get(DEALER, vehicle(1).id) is None
        assert await uow.outbox.list_after(0, 10) == []
        page = await uow.inventory.search(InventoryQuery(dealership_id=DEALER, filters=InventoryFilters()))
    assert page.total == 0


async def test_upserting_a_new_vin_under_an_id_taken_elsewhere_raises_already_exists(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    with pytest.raises(AlreadyExists) as caught:
        async with store.transaction() as uow:
            await uow.inventory.upsert(vehicle(2, id=vehicle(1).id))
    assert caught.value.code == "already_exists"
