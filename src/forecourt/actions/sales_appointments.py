"""Sales appointments for ``lead.submit``: requested windows checked against sales hours and booked appointments.

Times are judged in the dealership's time zone. A requested window that starts in the future, lies
inside one day's sales hours and overlaps fewer than :data:`SALES_CAPACITY` confirmed sales
appointments is ``confirmed``. Otherwise the dealer proposes up to :data:`MAX_PROPOSALS` real free
slots (30-minute grid, same duration) nearest the first requested window within
:data:`HORIZON`; only when none exists is the request refused with APPOINTMENT_TIME_UNAVAILABLE.
A request without windows stays ``requested`` for staff follow-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from forecourt.actions.schedule import within_hours, zone
from forecourt.domain.service import Appointment, AppointmentKind, AppointmentStatus
from forecourt.domain.tenancy import Dealership
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.errors import AapAppointmentUnavailable

SALES_CAPACITY = 2
"""Sales appointments (test drives, visits, appraisals) the showroom hosts at the same time."""
MAX_PROPOSALS = 4
HORIZON = timedelta(days=14)
STEP = timedelta(minutes=30)
DEFAULT_DURATION = timedelta(minutes=60)
_BLOCKING = (AppointmentStatus.CONFIRMED, AppointmentStatus.BOOKED)
KINDS: dict[str, AppointmentKind] = {
    "test_drive": AppointmentKind.TEST_DRIVE,
    "trade_in_appraisal": AppointmentKind.APPRAISAL,
}


@dataclass
class Plan:
    """What the dealer answers for an appointment request."""

    status: AppointmentStatus
    start: datetime | None = None
    end: datetime | None = None
    proposals: list[tuple[datetime, datetime]] = field(default_factory=list)


def _overlaps(a_start: datetime, a_end: datetime, b: Appointment) -> bool:
    return a_start < b.end and b.start < a_end


def _free(start: datetime, end: datetime, booked: Sequence[Appointment]) -> bool:
    return sum(1 for b in booked if _overlaps(start, end, b)) < SALES_CAPACITY


def _windows(request: Mapping[str, Any], duration: timedelta) -> list[tuple[datetime, datetime]]:
    out = []
    for window in request.get("requested_windows") or ():
        start = parse_rfc3339(str(window["start"]))
        end = parse_rfc3339(str(window["end"])) if window.get("end") else start + duration
        if end <= start:
            end = start + duration
        out.append((start, end))
    return out


def duration_of(request: Mapping[str, Any]) -> timedelta:
    """The appointment length: ``duration_minutes`` or one hour."""
    minutes = request.get("duration_minutes")
    return timedelta(minutes=int(minutes)) if minutes else DEFAULT_DURATION


def search_range(request: Mapping[str, Any], now: datetime) -> tuple[datetime, datetime]:
    """The span of booked appointments :func:`plan` needs to see."""
    windows = _windows(request, duration_of(request))
    first = min([now, *(s for s, _ in windows)])
    last = max([now, *(e for _, e in windows)])
    return first - timedelta(days=1), last + HORIZON + timedelta(days=1)


def _grid_start(anchor: datetime, now: datetime) -> datetime:
    start = max(anchor, now)
    minute = (start.minute // 30 + 1) * 30 if (start.minute % 30 or start.second or start.microsecond) else start.minute
    return start.replace(minute=0, second=0, microsecond=0) + timedelta(minutes=minute)


def _proposals(
    dealer: Dealership, anchor: datetime, duration: timedelta, booked: Sequence[Appointment], now: datetime
) -> list[tuple[datetime, datetime]]:
    tz = zone(dealer.timezone)
    cursor = _grid_start(anchor - timedelta(days=1), now)
    limit = max(anchor, now) + HORIZON
    found: list[tuple[datetime, datetime]] = []
    while cursor <= limit:
        end = cursor + duration
        if within_hours(dealer.sales_hours, tz, cursor, end) and _free(cursor, end, booked):
            found.append((cursor, end))
        cursor += STEP
    found.sort(key=lambda w: (abs((w[0] - anchor).total_seconds()), w[0]))
    return sorted(found[:MAX_PROPOSALS])


def plan(dealer: Dealership, request: Mapping[str, Any], booked: Sequence[Appointment], now: datetime) -> Plan:
    """Confirm a requested window, propose free slots, or leave it ``requested`` when no window was given."""
    duration = duration_of(request)
    windows = _windows(request, duration)
    if not windows:
        return Plan(AppointmentStatus.REQUESTED)
    tz = zone(dealer.timezone)
    blocking = [b for b in booked if b.status in _BLOCKING and b.kind != AppointmentKind.SERVICE]
    for start, end in windows:
        if start >= now and within_hours(dealer.sales_hours, tz, start, end) and _free(start, end, blocking):
            return Plan(AppointmentStatus.CONFIRMED, start, end)
    proposals = _proposals(dealer, windows[0][0], duration, blocking, now)
    if not proposals:
        raise AapAppointmentUnavailable(details={"searched_days": HORIZON.days})
    return Plan(AppointmentStatus.PROPOSED, proposals[0][0], proposals[0][1], proposals)
