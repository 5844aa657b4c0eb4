"""Pure service-lane scheduling: opening hours in the dealership's time zone and slot choice.

Hours are ``{weekday: DayHours(open="HH:MM", close="HH:MM")}`` in local time; keys may be full
(``monday``) or short (``mon``) weekday names in any case. A day that is missing or has no
``open``/``close`` is closed. A dealership with no service hours configured at all is bounded by its
slot table only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from forecourt.actions.representations import WEEKDAYS
from forecourt.domain.service import ServiceSlot
from forecourt.domain.tenancy import DayHours

MAX_ALTERNATIVES = 3


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (UTC when unknown, so a misconfigured zone never books at a random hour)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _hhmm(text: str) -> time | None:
    hours, _, minutes = text.partition(":")
    h, m = int(hours), int(minutes or 0)
    if (h, m) == (24, 0):
        return None  # end of day
    return time(h, m)


def hours_for(hours: Mapping[str, DayHours], weekday: int) -> tuple[time, time | None] | None:
    """``(open, close)`` for a weekday (0 = Monday); close ``None`` means midnight; ``None`` when closed."""
    name = WEEKDAYS[weekday]
    lookup = {k.strip().lower(): v for k, v in hours.items()}
    day = lookup.get(name) or lookup.get(name[:3])
    if day is None or not day.open or not day.close:
        return None
    return _hhmm(day.open) or time(0, 0), _hhmm(day.close)


def within_hours(hours: Mapping[str, DayHours], tz: ZoneInfo, start: datetime, end: datetime | None = None) -> bool:
    """Whether ``[start, end)`` (or the instant ``start``) lies inside one day's opening hours.

    With no hours configured at all, every time is accepted (the slot table alone decides).
    """
    if not hours:
        return True
    local_start = start.astimezone(tz)
    window = hours_for(hours, local_start.weekday())
    if window is None:
        return False
    opening, closing = window
    if local_start.time() < opening:
        return False
    day_end = datetime.combine(local_start.date(), closing or time(0, 0), tzinfo=tz)
    if closing is None:
        day_end += timedelta(days=1)
    if end is None:
        return local_start < day_end
    return end.astimezone(tz) <= day_end


def _advisor_matches(slot: ServiceSlot, advisor_id: str | None) -> bool:
    return advisor_id is None or slot.advisor_id in (None, advisor_id)


def containing_slot(slots: Iterable[ServiceSlot], start: datetime, advisor_id: str | None = None) -> ServiceSlot | None:
    """The slot whose window holds ``start`` for the advisor (a free one when several do)."""
    holding = [s for s in slots if s.start <= start < s.end and _advisor_matches(s, advisor_id)]
    holding.sort(key=lambda s: (not s.free, s.start, s.id))
    return holding[0] if holding else None


def alternatives(
    slots: Sequence[ServiceSlot],
    start: datetime,
    *,
    now: datetime,
    hours: Mapping[str, DayHours],
    tz: ZoneInfo,
    advisor_id: str | None = None,
    exclude: Iterable[str] = (),
    limit: int = MAX_ALTERNATIVES,
) -> list[ServiceSlot]:
    """Up to ``limit`` free slots nearest to ``start``, in the future and inside hours, in time order.

    Slots starting at the same instant (several advisors) count once.
    """
    skip = set(exclude)
    candidates = [
        s
        for s in slots
        if s.free
        and s.id not in skip
        and s.start >= now
        and _advisor_matches(s, advisor_id)
        and within_hours(hours, tz, s.start, s.end)
    ]
    candidates.sort(key=lambda s: (abs((s.start - start).total_seconds()), s.start, s.id))
    chosen: dict[datetime, ServiceSlot] = {}
    for slot in candidates:
        if slot.start not in chosen:
            chosen[slot.start] = slot
        if len(chosen) == limit:
            break
    return sorted(chosen.values(), key=lambda s: s.start)
