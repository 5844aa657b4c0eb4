"""Seed 002 §3.6 eventing: a vehicle that leaves the inventory is ``deleted`` for consumers, and ``created`` again
when it comes back, on the import's batched path and on the one-vehicle paths alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from forecourt.domain.vehicle import VehicleStatus
from forecourt.inventory_import import import_feed
from forecourt.store import SqlStore

from .conftest import DEALER

NOW = datetime(2026, 11, 20, 15, 30, tzinfo=UTC)
HEADER = "Stock #,VIN,Year,Make,Model,Type,Internet Price,Odometer,Status\n"
ROWS = [
    'A1,4T1DAACKXSU100101,2025,Toyota,Camry,new,"$28,995",5,In Stock',
    'A2,2T3P1RFV6RC100102,2024,Toyota,RAV4,used,"$25,995",30100,In Stock',
    'A3,5TDKDRAH1NS100103,2022,Toyota,Highlander,used,"$39,995",40100,In Transit',
]


def _feed(*rows: str) -> bytes:
    return (HEADER + "\n".join(rows) + "\n").encode()


async def _events_after(store: SqlStore, seq: int) -> list[tuple[str, str, str | None]]:
    async with store.transaction() as uow:
        events = await uow.outbox.list_after(seq, 1000, DEALER)
    return [(e.change_type.value, str(e.payload.get("vin")), e.status) for e in events]


async def _last_seq(store: SqlStore) -> int:
    async with store.transaction() as uow:
        return int(await uow.outbox.last_seq())


async def test_a_full_import_that_drops_vehicles_emits_deleted_events_not_updates(store: SqlStore) -> None:
    await import_feed(store, _feed(*ROWS), DEALER, now=NOW, filename="f.csv")
    seq = await _last_seq(store)
    report = await import_feed(store, _feed(ROWS[0]), DEALER, now=NOW + timedelta(hours=1), filename="f.csv", full=True)
    assert report.removed == 2
    events = await _events_after(store, seq)
    assert sorted(events) == [
        ("deleted", "2T3P1RFV6RC100102", "removed"),
        ("deleted", "5TDKDRAH1NS100103", "removed"),
    ]


async def test_a_deleted_vehicle_that_a_later_feed_lists_again_is_created_again(store: SqlStore) -> None:
    await import_feed(store, _feed(*ROWS), DEALER, now=NOW, filename="f.csv")
    await import_feed(store, _feed(ROWS[0]), DEALER, now=NOW + timedelta(hours=1), filename="f.csv", full=True)
    seq = await _last_seq(store)
    await import_feed(store, _feed(*ROWS[:2]), DEALER, now=NOW + timedelta(hours=2), filename="f.csv")
    assert await _events_after(store, seq) == [("created", "2T3P1RFV6RC100102", "available")]


async def test_a_feed_row_whose_status_is_removed_deletes_the_vehicle(store: SqlStore) -> None:
    await import_feed(store, _feed(*ROWS), DEALER, now=NOW, filename="f.csv")
    seq = await _last_seq(store)
    gone = ROWS[1].replace("In Stock", "Deleted")
    await import_feed(store, _feed(ROWS[0], gone, ROWS[2]), DEALER, now=NOW + timedelta(hours=1), filename="f.csv")
    assert await _events_after(store, seq) == [("deleted", "2T3P1RFV6RC100102", "removed")]


async def test_setting_and_clearing_the_removed_status_deletes_and_recreates_the_vehicle(store: SqlStore) -> None:
    await import_feed(store, _feed(*ROWS), DEALER, now=NOW, filename="f.csv")
    async with store.transaction() as uow:
        camry = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
    assert camry is not None
    seq = await _last_seq(store)
    at = NOW + timedelta(hours=1)
    async with store.transaction() as uow:
        await uow.inventory.set_status(DEALER, camry.id, VehicleStatus.REMOVED.value, at)
    async with store.transaction() as uow:
        await uow.inventory.set_status(DEALER, camry.id, VehicleStatus.AVAILABLE.value, at)
    async with store.transaction() as uow:
        stored = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
        assert stored is not None
        await uow.inventory.upsert(stored.model_copy(update={"status": VehicleStatus.REMOVED}))
    assert await _events_after(store, seq) == [
        ("deleted", "4T1DAACKXSU100101", "removed"),
        ("created", "4T1DAACKXSU100101", "available"),
        ("deleted", "4T1DAACKXSU100101", "removed"),
    ]
