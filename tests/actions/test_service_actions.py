"""service.* through the dealer-data adapter on SQLite: repair orders and booking against the slot table."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from forecourt.domain.service import AppointmentStatus, RepairOrderStatus
from forecourt.errors import ForecourtError

from .builders import DEALER, NOW, OTHER, repair_order, slot
from .conftest import Harness

LA = ZoneInfo("America/Los_Angeles")


def local(day: int, hour: int, minute: int = 0) -> datetime:
    """A time in May 2026 in Los Angeles (4 May is a Monday; NOW is 4 May 09:00)."""
    return datetime(2026, 5, day, hour, minute, tzinfo=LA)


def booking(start: datetime, **extra: object) -> dict[str, object]:
    return {"vehicle_id": "cust-veh-1", "start": start.isoformat(), "service_codes": ["OIL", "ROTATE"], **extra}


async def add_slots(harness: Harness, *slots: object) -> None:
    async with harness.store.transaction() as uow:
        await uow.service.add_slots(list(slots))  # type: ignore[arg-type]


async def test_a_free_slot_inside_hours_is_booked_at_the_slot_start_in_local_time(harness: Harness) -> None:
    await add_slots(harness, slot(local(5, 9)), slot(local(5, 10)))
    out = await harness.call("service.book_appointment", booking(local(5, 9, 20)))
    assert out["status"] == "booked"
    assert (out["start"], out["end"]) == ("2026-05-05T09:00:00-07:00", "2026-05-05T10:00:00-07:00")
    assert out["alternatives"] == []
    assert "reason" not in out
    async with harness.store.transaction() as uow:
        slots = await uow.service.list_slots(DEALER, local(5, 0), local(6, 0))
        appt = await uow.service.get_appointment(DEALER, out["appointment_id"])
    assert [s.booked for s in slots] == [1, 0]
    assert appt is not None
    assert appt.status == AppointmentStatus.BOOKED
    assert appt.service_codes == ("OIL", "ROTATE")


async def test_a_full_slot_is_waitlisted_with_the_three_nearest_free_alternatives(harness: Harness) -> None:
    await add_slots(
        harness,
        slot(local(5, 8)),
        slot(local(5, 9), booked=1),
        slot(local(5, 10)),
        slot(local(5, 13)),
        slot(local(6, 9)),
    )
    out = await harness.call("service.book_appointment", booking(local(5, 9)))
    assert (out["status"], out["reason"]) == ("waitlisted", "slot_full")
    assert out["alternatives"] == [
        "2026-05-05T08:00:00-07:00",
        "2026-05-05T10:00:00-07:00",
        "2026-05-05T13:00:00-07:00",
    ]
    async with harness.store.transaction() as uow:
        appt = await uow.service.get_appointment(DEALER, out["appointment_id"])
    assert appt is not None
    assert appt.status == AppointmentStatus.WAITLISTED


async def test_a_time_outside_service_hours_is_never_booked_even_with_a_free_slot(harness: Harness) -> None:
    # A stray slot on Sunday and one after closing on Saturday exist in the table but are outside hours.
    await add_slots(harness, slot(local(10, 10)), slot(local(9, 11, 30)), slot(local(11, 7)))
    sunday = await harness.call("service.book_appointment", booking(local(10, 10)))
    assert (sunday["status"], sunday["reason"]) == ("waitlisted", "outside_service_hours")
    assert sunday["alternatives"] == ["2026-05-11T07:00:00-07:00"]
    late = await harness.call("service.book_appointment", booking(local(9, 11, 30)))
    assert (late["status"], late["reason"]) == ("waitlisted", "outside_service_hours")


async def test_a_time_inside_hours_without_a_slot_is_waitlisted_as_no_slot(harness: Harness) -> None:
    await add_slots(harness, slot(local(5, 9)))
    out = await harness.call("service.book_appointment", booking(local(5, 15)))
    assert (out["status"], out["reason"], out["alternatives"]) == (
        "waitlisted",
        "no_slot",
        ["2026-05-05T09:00:00-07:00"],
    )


async def test_a_start_given_in_utc_is_checked_in_the_dealerships_time_zone(harness: Harness) -> None:
    await add_slots(harness, slot(local(5, 9)))
    out = await harness.call("service.book_appointment", booking(local(5, 9).astimezone(ZoneInfo("UTC"))))
    assert (out["status"], out["start"]) == ("booked", "2026-05-05T09:00:00-07:00")


async def test_only_as_many_concurrent_bookings_succeed_as_the_slot_has_bays(harness: Harness) -> None:
    await add_slots(harness, slot(local(5, 9), capacity=2))
    outs = await asyncio.gather(*(harness.call("service.book_appointment", booking(local(5, 9))) for _ in range(4)))
    assert sorted(o["status"] for o in outs) == ["booked", "booked", "waitlisted", "waitlisted"]


async def test_an_advisor_request_books_only_that_advisors_slot(harness: Harness) -> None:
    await add_slots(harness, slot(local(5, 9), advisor_id="adv-1", booked=1), slot(local(5, 9), advisor_id="adv-2"))
    mine = await harness.call("service.book_appointment", booking(local(5, 9), advisor_id="adv-1"))
    assert mine["status"] == "waitlisted"
    anyone = await harness.call("service.book_appointment", booking(local(5, 9)))
    assert (anyone["status"], anyone["advisor_id"]) == ("booked", "adv-2")


async def test_a_start_in_the_past_is_invalid_params(harness: Harness) -> None:
    with pytest.raises(ForecourtError) as info:
        await harness.call("service.book_appointment", booking(NOW - timedelta(hours=1)))
    assert info.value.code == "invalid_params"


async def test_booking_for_an_unknown_customer_is_customer_not_found(harness: Harness) -> None:
    with pytest.raises(ForecourtError) as info:
        await harness.call("service.book_appointment", booking(local(5, 9), customer_id="nobody"))
    assert info.value.code == "customers.customer_not_found"


async def test_repair_orders_are_listed_by_status_and_fetched_by_id_or_ro_number(harness: Harness) -> None:
    async with harness.store.transaction() as uow:
        for n in range(1, 4):
            await uow.service.add_repair_order(repair_order(n))
        await uow.service.add_repair_order(repair_order(4, status=RepairOrderStatus.READY))
        await uow.service.add_repair_order(repair_order(9, dealership_id=OTHER))
    page = await harness.call("service.list_repair_orders", {"status": "open", "limit": 2})
    assert page["total"] == 3
    assert len(page["items"]) == 2
    assert "next_cursor" in page
    rest = await harness.call(
        "service.list_repair_orders", {"status": "open", "limit": 2, "cursor": page["next_cursor"]}
    )
    assert len(rest["items"]) == 1
    assert "next_cursor" not in rest
    by_number = await harness.call("service.get_repair_order", {"ro_number": "ro-00004"})
    assert (by_number["id"], by_number["status"]) == (f"ro-{DEALER}-4", "ready")
    assert by_number["total"] == {"amount_minor": 8_999, "currency": "USD"}
    assert by_number["mileage_in"] == {"value": 41_000, "unit": "mi"}
    by_id = await harness.call("service.get_repair_order", {"repair_order_id": f"ro-{DEALER}-1"})
    assert by_id["ro_number"] == "RO-00001"


async def test_another_dealerships_repair_order_is_not_found(harness: Harness) -> None:
    async with harness.store.transaction() as uow:
        await uow.service.add_repair_order(repair_order(9, dealership_id=OTHER))
    for payload in ({"repair_order_id": f"ro-{OTHER}-9"}, {"ro_number": "RO-00009"}):
        with pytest.raises(ForecourtError) as info:
            await harness.call("service.get_repair_order", payload)
        assert info.value.code == "service.repair_order_not_found"
