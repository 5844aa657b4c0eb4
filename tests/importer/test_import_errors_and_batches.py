"""Every error of a row with its column and value class, dry runs, and the batched write path on both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from forecourt.domain.tenancy import Dealership
from forecourt.domain.vehicle import VehicleStatus
from forecourt.inventory_import import build_vehicle, import_feed, read_feed, validate_feed
from forecourt.inventory_import.importer import new_vehicle
from forecourt.store import SqlStore

from .conftest import DEALER, FEEDS

NOW = datetime(2026, 11, 20, 15, 30, tzinfo=UTC)
HEADER = "Stock #,VIN,Year,Make,Model,Type,Internet Price,Odometer,Status\n"
GOOD = [
    'A1,4T1DAACKXSU100101,2025,Toyota,Camry,new,"$28,995",5,In Stock',
    'A2,2T3P1RFV6RC100102,2024,Toyota,RAV4,used,"$25,995",30100,In Stock',
    'A3,5TDKDRAH1NS100103,2022,Toyota,Highlander,used,"$39,995",40100,Sale Pending',
    'A4,JTDBCMEE6PJ100104,2023,Toyota,Corolla,used,"$19,995",20100,In Stock',
    'A5,3TMLB5JN6MM100105,2021,Toyota,Tacoma,used,"$29,995",60100,In Stock',
]


def _feed(*rows: str) -> bytes:
    return (HEADER + "\n".join(rows) + "\n").encode()


async def _events(store: SqlStore) -> list[tuple[str, str]]:
    async with store.transaction() as uow:
        events = await uow.outbox.list_after(0, 1000, DEALER)
    return [(e.change_type.value, str(e.payload.get("vin"))) for e in events if e.resource_type.value == "vehicle"]


async def test_a_row_with_several_bad_cells_reports_every_error_with_its_column_and_never_the_value(
    store: SqlStore,
) -> None:
    bad = "B1,4T1DAACKXSU100101,20X3,Toyota,Camry,salvage,twenty grand,-5 mi,lost at sea"
    report = await import_feed(store, _feed(bad), DEALER, now=NOW, filename="f.csv")
    assert report.rejected == 1
    row = report.rejected_rows[0]
    assert [(e.line, e.column, e.field, e.code) for e in row.errors] == [
        (2, "Year", "year", "bad_number"),
        (2, "Type", "condition", "unknown_condition"),
        (2, "Internet Price", "price", "bad_price"),
        (2, "Odometer", "mileage", "bad_number"),
        (2, "Status", "status", "unknown_status"),
    ]
    assert [e.value_class for e in row.errors][:3] == [
        "letters and digits (4 characters)", "words (7 characters)", "words (12 characters)",
    ]  # fmt: skip
    dumped = report.model_dump_json()
    for raw in ("20X3", "salvage", "twenty grand", "lost at sea"):
        assert raw not in dumped
    assert len(report.errors) == 5


async def test_a_missing_required_cell_names_the_feed_column_and_the_value_class_empty(store: SqlStore) -> None:
    report = await import_feed(store, _feed("B2,2T3P1RFV6RC100102,2024,,RAV4,used,,30100,"), DEALER, now=NOW,
                               filename="f.csv")  # fmt: skip
    codes = [(e.column, e.code, e.value_class) for e in report.rejected_rows[0].errors]
    assert codes == [("Make", "missing_field", "empty"), ("Internet Price", "missing_field", "empty")]


async def test_a_dry_run_counts_what_an_import_would_do_and_writes_nothing(store: SqlStore) -> None:
    await import_feed(store, _feed(*GOOD[:2]), DEALER, now=NOW, filename="f.csv")
    before = await _events(store)
    changed = GOOD[0].replace("$28,995", "$27,995")
    report = await import_feed(store, _feed(changed, GOOD[2], "junk,row"), DEALER, now=NOW, filename="f.csv",
                               dry_run=True, full=True)  # fmt: skip
    assert report.dry_run
    assert (report.created, report.updated, report.unchanged, report.removed, report.rejected) == (1, 1, 0, 1, 1)
    assert await _events(store) == before
    async with store.transaction() as uow:
        assert await uow.inventory.count(DEALER) == 2
        camry = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
    assert camry is not None
    assert camry.price.amount_minor == 2899500


async def test_batches_keep_upsert_semantics_events_and_duplicate_detection_across_batch_boundaries(
    store: SqlStore,
) -> None:
    first = await import_feed(store, _feed(*GOOD, GOOD[1]), DEALER, now=NOW, filename="f.csv", batch_rows=2)
    assert (first.created, first.rejected) == (5, 1)
    assert first.rejected_rows[0].code == "duplicate_vin"
    assert first.rejected_rows[0].line == 7
    assert sorted(await _events(store)) == sorted(("created", row.split(",")[1]) for row in GOOD)
    later = NOW + timedelta(hours=1)
    changed = [GOOD[0].replace("$28,995", "$27,500"), *GOOD[1:3], GOOD[3].replace("In Stock", "Sold")]
    second = await import_feed(store, _feed(*changed), DEALER, now=later, filename="f.csv", batch_rows=3, full=True)
    assert (second.created, second.updated, second.unchanged, second.removed) == (0, 2, 2, 1)
    async with store.transaction() as uow:
        camry = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
        corolla = await uow.inventory.get_by_vin(DEALER, "JTDBCMEE6PJ100104")
        tacoma = await uow.inventory.get_by_vin(DEALER, "3TMLB5JN6MM100105")
        rav4 = await uow.inventory.get_by_vin(DEALER, "2T3P1RFV6RC100102")
    assert camry is not None
    assert corolla is not None
    assert tacoma is not None
    assert rav4 is not None
    assert camry.price.amount_minor == 2750000
    assert camry.created_at is not None
    assert camry.updated_at is not None
    assert camry.updated_at >= camry.created_at
    assert (corolla.status, corolla.sold_at) == (VehicleStatus.SOLD, later)
    assert tacoma.status is VehicleStatus.REMOVED
    assert rav4.last_verified_at == later
    later_events = (await _events(store))[len(GOOD) :]
    assert sorted(later_events) == sorted([("updated", "4T1DAACKXSU100101"), ("updated", "JTDBCMEE6PJ100104"),
                                           ("deleted", "3TMLB5JN6MM100105")])  # fmt: skip
    third = await import_feed(store, _feed(*GOOD), DEALER, now=later, filename="f.csv", batch_rows=2)
    assert (third.created, third.updated, third.unchanged) == (0, 3, 2)  # price back, unsold, tacoma back on sale
    assert ("created", "3TMLB5JN6MM100105") in (await _events(store))[len(GOOD) + 3 :]  # back in the inventory


def test_a_new_vehicle_is_built_the_same_with_or_without_model_validation() -> None:
    dealer = Dealership(id=DEALER, company_id="c", name="Dealer")
    for name in ("canonical.csv", "aliases.csv", "feed.json"):
        raw, _ = read_feed((FEEDS / name).read_bytes(), filename=name)
        rows, _ = validate_feed(raw, currency="USD", year_max=2028)
        assert rows
        for row in rows:
            assert new_vehicle(row, dealer, NOW) == build_vehicle(row, None, dealer, NOW), (name, row.line)
