"""Service repository contract: repair orders, appointments, slots (atomic booking) and valuations."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from forecourt.domain.deals import TradeValuation
from forecourt.domain.events import ChangeType, ResourceType
from forecourt.domain.money import Money
from forecourt.domain.service import AppointmentStatus, RepairOrderStatus
from forecourt.errors import AlreadyExists, AppointmentNotFound, RepairOrderNotFound
from forecourt.store import SqlStore

from .factories import DEALER, OTHER_DEALER, T0, appointment, repair_order, slot


async def test_repair_orders_add_get_update_and_list_newest_first(store: SqlStore) -> None:
    async with store.transaction() as uow:
        for n in (1, 2, 3):
            await uow.service.add_repair_order(repair_order(n))
        ready = repair_order(2, status=RepairOrderStatus.READY, mileage_in=None, updated_at=T0 + timedelta(days=1))
        await uow.service.update_repair_order(ready)
        got = await uow.service.get_repair_order(DEALER, "ro-2")
        first = await uow.service.get_repair_order(DEALER, "ro-1")
        page, total = await uow.service.list_repair_orders(DEALER, 0, 2)
        open_only, open_total = await uow.service.list_repair_orders(DEALER, 0, 10, status="open")
        events = await uow.outbox.list_after(0, 10)
        assert await uow.service.get_repair_order(OTHER_DEALER, "ro-1") is None
    assert got == ready
    assert first == repair_order(1)
    assert ([r.id for r in page], total) == (["ro-3", "ro-2"], 3)
    assert ([r.id for r in open_only], open_total) == (["ro-3", "ro-1"], 2)
    assert (events[-1].resource_type, events[-1].change_type, events[-1].status) == (
        ResourceType.REPAIR_ORDER,
        ChangeType.UPDATED,
        "ready",
    )


async def test_repair_order_errors_have_stable_codes(store: SqlStore) -> None:
    with pytest.raises(RepairOrderNotFound) as missing:
        async with store.transaction() as uow:
            await uow.service.update_repair_order(repair_order(1))
    async with store.transaction() as uow:
        await uow.service.add_repair_order(repair_order(1))
    with pytest.raises(AlreadyExists) as same_number:
        async with store.transaction() as uow:
            await uow.service.add_repair_order(repair_order(1, id="ro-other"))
    assert (missing.value.code, same_number.value.code) == ("service.repair_order_not_found", "already_exists")


async def test_appointments_add_get_update_and_list_in_a_window(store: SqlStore) -> None:
    async with store.transaction() as uow:
        for n in (1, 2, 5):
            await uow.service.add_appointment(appointment(n))
        cancelled = appointment(2, status=AppointmentStatus.CANCELLED)
        await uow.service.update_appointment(cancelled)
        got = await uow.service.get_appointment(DEALER, "appt-2")
        window, total = await uow.service.list_appointments(DEALER, T0, T0 + timedelta(hours=5))
        paged, paged_total = await uow.service.list_appointments(DEALER, T0, T0 + timedelta(days=1), 1, 1)
        events = await uow.outbox.list_after(0, 10)
    assert got == cancelled
    assert ([a.id for a in window], total) == (["appt-1", "appt-2"], 2)
    assert ([a.id for a in paged], paged_total) == (["appt-2"], 3)
    assert [(e.resource_type, e.status) for e in events][-1] == (ResourceType.APPOINTMENT, "cancelled")


async def test_appointment_errors_have_stable_codes(store: SqlStore) -> None:
    with pytest.raises(AppointmentNotFound) as missing:
        async with store.transaction() as uow:
            await uow.service.update_appointment(appointment(1))
    assert missing.value.code == "service.appointment_not_found"


async def test_slots_are_listed_in_a_window_and_adding_them_again_changes_nothing(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.service.add_slots([slot(1), slot(2), slot(30), slot(3, dealership_id=OTHER_DEALER)])
        assert await uow.service.book_slot(DEALER, "slot-1") is True
        await uow.service.add_slots([slot(1), slot(2)])
        listed = await uow.service.list_slots(DEALER, T0, T0 + timedelta(hours=24))
    assert [(s.id, s.booked, s.capacity) for s in listed] == [("slot-1", 1, 2), ("slot-2", 0, 2)]
    assert listed[1] == slot(2)


async def test_book_slot_never_exceeds_capacity(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.service.add_slots([slot(1, capacity=2)])
        results = [await uow.service.book_slot(DEALER, "slot-1") for _ in range(3)]
        unknown = await uow.service.book_slot(DEALER, "slot-9")
        wrong_dealer = await uow.service.book_slot(OTHER_DEALER, "slot-1")
        (stored,) = await uow.service.list_slots(DEALER, T0, T0 + timedelta(days=1))
    assert results == [True, True, False]
    assert (unknown, wrong_dealer) == (False, False)
    assert stored.booked == 2
    assert not stored.free


async def test_concurrent_bookings_never_overbook_a_slot(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.service.add_slots([slot(1, capacity=3)])

    async def book() -> bool:
        async with store.transaction() as uow:
            return await uow.service.book_slot(DEALER, "slot-1")

    results = await asyncio.gather(*(book() for _ in range(8)))
    async with store.transaction() as uow:
        (stored,) = await uow.service.list_slots(DEALER, T0, T0 + timedelta(days=1))
    assert sorted(results) == [False] * 5 + [True] * 3
    assert stored.booked == 3


async def test_valuations_are_stored_once(store: SqlStore) -> None:
    valuation = TradeValuation(
        id="val-1",
        dealership_id=DEALER,
        year=2018,
        make="Honda",
        model="Civic",
        mileage=60_000,
        condition="good",
        low=Money.of(1_200_000),
        estimate=Money.of(1_350_000),
        high=Money.of(1_500_000),
        comparable_count=7,
        valid_until=T0 + timedelta(days=7),
        created_at=T0,
    )
    async with store.transaction() as uow:
        await uow.service.add_valuation(valuation)
    with pytest.raises(AlreadyExists) as twice:
        async with store.transaction() as uow:
            await uow.service.add_valuation(valuation)
    assert twice.value.code == "already_exists"
