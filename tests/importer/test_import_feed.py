"""import_feed against the real store: upserts by VIN, bad rows, --full, atomicity, encodings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from forecourt.domain.vehicle import VehicleStatus
from forecourt.errors import DealershipNotFound, ImportRejected
from forecourt.inventory_import import import_feed
from forecourt.store import SqlStore

from .conftest import DEALER, FEEDS, OTHER

NOW = datetime(2026, 11, 20, 15, 30, tzinfo=UTC)
CANONICAL = FEEDS / "canonical.csv"


async def _count(store: SqlStore, dealership_id: str = DEALER) -> int:
    async with store.transaction() as uow:
        return await uow.inventory.count(dealership_id)


async def test_a_canonical_csv_feed_creates_every_vehicle_with_exact_prices(store: SqlStore) -> None:
    report = await import_feed(store, CANONICAL, DEALER, now=NOW)
    assert (report.created, report.updated, report.unchanged, report.rejected) == (3, 0, 0, 0)
    async with store.transaction() as uow:
        camry = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
        highlander = await uow.inventory.get_by_vin(DEALER, "5TDKDRAH1NS100103")
    assert camry is not None
    assert highlander is not None
    assert camry.price.amount_minor == 3499500
    assert camry.msrp is not None
    assert camry.msrp.amount_minor == 3553400
    assert camry.photos == (
        "https://cdn.forecourt.example/f/t1001/01.jpg",
        "https://cdn.forecourt.example/f/t1001/02.jpg",
    )
    assert camry.last_verified_at == NOW
    assert highlander.price.amount_minor == 4199550
    assert highlander.status is VehicleStatus.PENDING
    assert highlander.mileage.value == 38120


async def test_importing_the_same_feed_again_leaves_every_vehicle_unchanged(store: SqlStore) -> None:
    await import_feed(store, CANONICAL, DEALER, now=NOW)
    async with store.transaction() as uow:
        seq = await uow.outbox.last_seq()
    later = NOW + timedelta(hours=6)
    report = await import_feed(store, CANONICAL, DEALER, now=later)
    assert (report.created, report.updated, report.unchanged) == (0, 0, 3)
    async with store.transaction() as uow:
        assert await uow.outbox.last_seq() == seq
        camry = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
    assert camry is not None
    assert camry.last_verified_at == later


async def test_a_changed_price_counts_as_an_update_and_keeps_the_vehicle_id(store: SqlStore) -> None:
    await import_feed(store, CANONICAL, DEALER, now=NOW)
    async with store.transaction() as uow:
        before = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
    changed = CANONICAL.read_bytes().replace(b'"$34,995.00"', b'"$33,995.00"')
    report = await import_feed(store, changed, DEALER, now=NOW, fmt="csv")
    assert (report.created, report.updated, report.unchanged) == (0, 1, 2)
    async with store.transaction() as uow:
        after = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
    assert before is not None
    assert after is not None
    assert after.id == before.id
    assert after.price.amount_minor == 3399500


async def test_bad_rows_are_reported_and_the_good_rows_imported(store: SqlStore) -> None:
    report = await import_feed(store, FEEDS / "bad_rows.csv", DEALER, now=NOW)
    assert report.created == 2
    assert report.rejected == 8
    assert [r.line for r in report.rejected_rows] == [3, 4, 5, 6, 7, 8, 9, 10]
    assert report.rejected_rows[0].code == "invalid_vin.check_digit"
    assert await _count(store) == 2


async def test_columns_the_feed_leaves_out_keep_their_stored_values(store: SqlStore) -> None:
    await import_feed(store, CANONICAL, DEALER, now=NOW)
    slim = b"vin,year,make,model,condition,price\n4T1DAACKXSU100101,2025,Toyota,Camry,new,33995\n"
    report = await import_feed(store, slim, DEALER, now=NOW, fmt="csv")
    assert report.updated == 1
    async with store.transaction() as uow:
        camry = await uow.inventory.get_by_vin(DEALER, "4T1DAACKXSU100101")
    assert camry is not None
    assert (camry.stock, camry.trim, camry.exterior_color, len(camry.photos)) == ("T1001", "XLE", "Wind Chill Pearl", 2)


async def test_a_full_import_marks_vehicles_missing_from_the_feed_removed_without_deleting(store: SqlStore) -> None:
    await import_feed(store, CANONICAL, DEALER, now=NOW)
    await import_feed(store, FEEDS / "canonical.csv", OTHER, now=NOW)
    only_camry = b"vin,year,make,model,condition,price,mileage\n4T1DAACKXSU100101,2025,Toyota,Camry,new,34995,12\n"
    report = await import_feed(store, only_camry, DEALER, full=True, now=NOW, fmt="csv")
    # the RAV4 was available and goes; the Highlander was pending (not offered) and is left as it was
    assert report.removed == 1
    assert await _count(store) == 3
    async with store.transaction() as uow:
        rav4 = await uow.inventory.get_by_vin(DEALER, "2T3P1RFV6RC100102")
        other_rav4 = await uow.inventory.get_by_vin(OTHER, "2T3P1RFV6RC100102")
    assert rav4 is not None
    assert rav4.status is VehicleStatus.REMOVED
    assert other_rav4 is not None
    assert other_rav4.status is VehicleStatus.AVAILABLE


async def test_a_removed_vehicle_that_reappears_in_the_feed_is_available_again(store: SqlStore) -> None:
    await import_feed(store, CANONICAL, DEALER, now=NOW)
    only_camry = b"vin,year,make,model,condition,price,mileage\n4T1DAACKXSU100101,2025,Toyota,Camry,new,34995,12\n"
    await import_feed(store, only_camry, DEALER, full=True, now=NOW, fmt="csv")
    report = await import_feed(store, CANONICAL, DEALER, full=True, now=NOW)
    assert (report.updated, report.removed) == (1, 0)
    async with store.transaction() as uow:
        rav4 = await uow.inventory.get_by_vin(DEALER, "2T3P1RFV6RC100102")
    assert rav4 is not None
    assert rav4.status is VehicleStatus.AVAILABLE


async def test_a_full_import_keeps_a_vehicle_whose_row_was_rejected_for_a_bad_price(store: SqlStore) -> None:
    await import_feed(store, CANONICAL, DEALER, now=NOW)
    feed = (
        b"vin,year,make,model,condition,price,mileage\n"
        b"4T1DAACKXSU100101,2025,Toyota,Camry,new,34995,12\n"
        b"2T3P1RFV6RC100102,2024,Toyota,RAV4,used,call us,18250\n"
    )
    report = await import_feed(store, feed, DEALER, full=True, now=NOW, fmt="csv")
    assert (report.rejected, report.removed) == (1, 0)


async def test_a_full_import_with_no_usable_rows_is_refused(store: SqlStore) -> None:
    await import_feed(store, CANONICAL, DEALER, now=NOW)
    feed = b"vin,year,make,model,condition,price,mileage\nNOTAVIN,2025,Toyota,Camry,new,34995,12\n"
    with pytest.raises(ImportRejected) as info:
        await import_feed(store, feed, DEALER, full=True, now=NOW, fmt="csv")
    assert info.value.details["reason"] == "empty_feed"
    assert await _count(store) == 3


async def test_a_database_error_part_way_leaves_nothing_written(store: SqlStore) -> None:
    """A trigger makes the database itself fail on the third vehicle: the first two must not stay."""
    async with store.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(sa.text(
                "CREATE FUNCTION fail_import() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk full'; END; "
                "$$ LANGUAGE plpgsql"
            ))  # fmt: skip
            await conn.execute(sa.text(
                "CREATE TRIGGER fail_import BEFORE INSERT ON vehicles FOR EACH ROW "
                "WHEN (NEW.vin = '5TDKDRAH1NS100103') EXECUTE FUNCTION fail_import()"
            ))  # fmt: skip
        else:
            await conn.execute(sa.text(
                "CREATE TRIGGER fail_import BEFORE INSERT ON vehicles WHEN NEW.vin = '5TDKDRAH1NS100103' "
                "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
            ))  # fmt: skip
    with pytest.raises(sa.exc.DBAPIError):
        await import_feed(store, CANONICAL, DEALER, now=NOW)
    assert await _count(store) == 0
    async with store.transaction() as uow:
        assert await uow.outbox.last_seq() == 0


async def test_a_cp1252_feed_is_imported_with_its_accents_intact(store: SqlStore) -> None:
    report = await import_feed(store, FEEDS / "cp1252.csv", DEALER, now=NOW)
    assert (report.created, report.encoding, report.encoding_fallback) == (2, "cp1252", True)
    async with store.transaction() as uow:
        accord = await uow.inventory.get_by_vin(DEALER, "1HGCY1F32RA100106")
    assert accord is not None
    assert accord.exterior_color == "Blanc Glacé"


async def test_a_truncated_json_feed_writes_nothing(store: SqlStore) -> None:
    with pytest.raises(ImportRejected):
        await import_feed(store, FEEDS / "truncated.json", DEALER, now=NOW)
    assert await _count(store) == 0


async def test_a_truncated_csv_imports_the_complete_rows(store: SqlStore) -> None:
    report = await import_feed(store, FEEDS / "truncated.csv", DEALER, now=NOW)
    assert (report.created, report.rejected) == (2, 1)
    assert report.rejected_rows[0].code == "truncated_row"


async def test_a_json_feed_imports_with_aliases_and_exact_cents(store: SqlStore) -> None:
    report = await import_feed(store, FEEDS / "feed.json", DEALER, now=NOW)
    assert (report.format, report.created, report.rejected) == ("json", 3, 2)
    async with store.transaction() as uow:
        rav4 = await uow.inventory.get_by_vin(DEALER, "2T3P1RFV6RC100102")
    assert rav4 is not None
    assert (rav4.price.amount_minor, rav4.stock, rav4.driveline) == (2999599, "J2", "awd")


async def test_an_unknown_dealership_is_refused(store: SqlStore) -> None:
    with pytest.raises(DealershipNotFound) as info:
        await import_feed(store, CANONICAL, "no-such-dealer", now=NOW)
    assert info.value.code == "tenancy.dealership_not_found"


async def test_a_sold_status_stamps_sold_at(store: SqlStore) -> None:
    await import_feed(store, FEEDS / "aliases.csv", DEALER, now=NOW)
    async with store.transaction() as uow:
        accord = await uow.inventory.get_by_vin(DEALER, "1HGCY1F32RA100106")
    assert accord is not None
    assert (accord.status, accord.sold_at) == (VehicleStatus.SOLD, NOW)
