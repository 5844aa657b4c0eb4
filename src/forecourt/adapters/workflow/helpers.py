"""Date helpers that BPMN scripts may call: business hours, reminder times, local formatting.

Hours come in the shape ``dealer.information`` answers with: ``{"monday": {"open": "09:00", "close":
"20:00"}, ..., "sunday": None}`` (local time of the dealership's ``time_zone``). Times go in and come out
as RFC 3339 strings with an offset, so task data stays plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SEARCH_DAYS = 14


def _parse(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError("a timestamp with an offset is required")
    return parsed


def _window(hours: Mapping[str, Any], day: datetime, tz: ZoneInfo) -> tuple[datetime, datetime] | None:
    entry = hours.get(WEEKDAYS[day.weekday()])
    if not isinstance(entry, Mapping) or not entry.get("open") or not entry.get("close"):
        return None
    start = datetime.combine(day.date(), time.fromisoformat(str(entry["open"])), tz)
    end = datetime.combine(day.date(), time.fromisoformat(str(entry["close"])), tz)
    return (start, end) if end > start else None


def add_business_minutes(hours: Mapping[str, Any], time_zone: str, start: str, minutes: int) -> str:
    """The moment ``minutes`` of opening time after ``start`` (closed hours do not count).

    Example: 60 business minutes after Friday 19:30 at a store open until 20:00 and from 09:00 on
    Saturday is Saturday 09:30.
    """
    tz = ZoneInfo(time_zone)
    cursor = _parse(start).astimezone(tz)
    remaining = timedelta(minutes=max(int(minutes), 0))
    for _ in range(_SEARCH_DAYS):
        window = _window(hours, cursor, tz)
        if window is not None:
            opens, closes = window
            cursor = max(cursor, opens)
            if cursor < closes:
                available = closes - cursor
                if remaining <= available:
                    return (cursor + remaining).isoformat()
                remaining -= available
        cursor = datetime.combine(cursor.date() + timedelta(days=1), time(0, 0), tz)
    raise ValueError("the dealership has no opening hours in the next two weeks")


def reminder_time(hours: Mapping[str, Any], time_zone: str, appointment_start: str, lead_hours: int, now: str) -> str:
    """When to remind a customer: ``lead_hours`` before the appointment, moved into opening hours.

    A target outside opening hours moves back to the latest open moment before it (a reminder the
    evening before, not at 3 a.m.); a target already past is ``now``.
    """
    tz = ZoneInfo(time_zone)
    target = (_parse(appointment_start) - timedelta(hours=int(lead_hours))).astimezone(tz)
    current = _parse(now).astimezone(tz)
    day = target
    for _ in range(_SEARCH_DAYS):
        window = _window(hours, day, tz)
        if window is not None:
            opens, closes = window
            if opens <= target < closes:
                break
            if closes <= target:
                target = closes - timedelta(minutes=30)
                break
        day = datetime.combine(day.date() - timedelta(days=1), time(23, 59), tz)
    return max(target, current).isoformat()


def format_local(value: str, time_zone: str) -> str:
    """A customer-friendly local time, e.g. ``Tuesday, March 3 at 9:30 AM``."""
    local = _parse(value).astimezone(ZoneInfo(time_zone))
    hour = local.strftime("%I").lstrip("0")
    return f"{local.strftime('%A, %B')} {local.day} at {hour}:{local.strftime('%M %p')}"
