"""Service-lane scheduling: hours in the dealership's time zone and the choice of slots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from forecourt.actions import schedule
from forecourt.domain.tenancy import DayHours

from .builders import NOW, service_hours, slot

LA = ZoneInfo("America/Los_Angeles")


def local(day: int, hour: int, minute: int = 0) -> datetime:
    """A time in May 2026 in Los Angeles (4 May is a Monday)."""
    return datetime(2026, 5, day, hour, minute, tzinfo=LA)


def test_a_weekday_morning_is_inside_service_hours() -> None:
    assert schedule.within_hours(service_hours(), LA, local(4, 7, 0))


def test_hours_are_checked_in_the_dealership_time_zone_not_utc() -> None:
    # 15:00 UTC is 08:00 in Los Angeles: open; 02:00 UTC on Tuesday is 19:00 Monday there: closed.
    assert schedule.within_hours(service_hours(), LA, datetime(2026, 5, 4, 15, 0, tzinfo=UTC))
    assert not schedule.within_hours(service_hours(), LA, datetime(2026, 5, 5, 2, 0, tzinfo=UTC))


def test_sunday_and_before_opening_are_outside_service_hours() -> None:
    assert not schedule.within_hours(service_hours(), LA, local(10, 10))
    assert not schedule.within_hours(service_hours(), LA, local(4, 6, 59))


def test_a_slot_running_past_closing_is_outside_service_hours() -> None:
    assert schedule.within_hours(service_hours(), LA, local(9, 11), local(9, 12))
    assert not schedule.within_hours(service_hours(), LA, local(9, 11, 30), local(9, 12, 30))


def test_short_weekday_keys_and_a_midnight_close_are_understood() -> None:
    hours = {"Mon": DayHours(open="20:00", close="24:00")}
    assert schedule.within_hours(hours, LA, local(4, 23, 30), local(5, 0, 0))
    assert not schedule.within_hours(hours, LA, local(5, 21))


def test_without_configured_hours_only_the_slot_table_decides() -> None:
    assert schedule.within_hours({}, LA, local(10, 3))


def test_an_unknown_time_zone_falls_back_to_utc() -> None:
    assert schedule.zone("Mars/Olympus_Mons") == ZoneInfo("UTC")


def test_the_containing_slot_prefers_a_free_bay_among_advisors() -> None:
    full = slot(local(5, 9), advisor_id="a1", booked=1)
    free = slot(local(5, 9), advisor_id="a2")
    assert schedule.containing_slot([full, free], local(5, 9, 20)) == free
    assert schedule.containing_slot([full, free], local(5, 9, 20), advisor_id="a1") == full
    assert schedule.containing_slot([full, free], local(5, 10, 0)) is None


def test_alternatives_are_the_three_nearest_free_future_slots_inside_hours_in_time_order() -> None:
    slots = [
        slot(local(5, 8)),
        slot(local(5, 9), booked=1),
        slot(local(5, 10)),
        slot(local(5, 11)),
        slot(local(5, 17, 30)),  # runs past 18:00
        slot(local(5, 15)),
        slot(local(4, 8)),  # already past at NOW (Monday 09:00)
    ]
    chosen = schedule.alternatives(slots, local(5, 9), now=NOW, hours=service_hours(), tz=LA)
    assert [s.start for s in chosen] == [local(5, 8), local(5, 10), local(5, 11)]


def test_alternatives_count_one_start_time_once_and_skip_the_excluded_slot() -> None:
    a = slot(local(5, 10), advisor_id="a1")
    b = slot(local(5, 10), advisor_id="a2")
    c = slot(local(5, 12))
    chosen = schedule.alternatives(
        [a, b, c], local(5, 10), now=NOW, hours=service_hours(), tz=LA, exclude=[c.id], limit=3
    )
    assert [s.start for s in chosen] == [local(5, 10)]
    assert NOW < chosen[0].start < NOW + timedelta(days=2)
