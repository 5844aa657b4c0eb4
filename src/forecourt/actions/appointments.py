"""Service appointments: ``service.get_appointment``, ``service.list_appointments`` and
``service.update_appointment`` (confirm or cancel; the shipped workflows use it).

Ordinary dealer actions, so policy, tenancy, audit and rate limits apply to MCP resource reads and workflow
service tasks exactly as to tool calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from forecourt.actions.base import AdapterResult, ExecutionContext, Handler
from forecourt.actions.common import (
    ID,
    NULLABLE_STRING,
    TIMESTAMP,
    dealer_action,
    input_schema,
    obj,
    output_schema,
    page_schema,
    require_dealership,
    result,
)
from forecourt.actions.representations import appointment_repr
from forecourt.actions.schedule import zone
from forecourt.contract.paging import next_cursor, open_page, page_output
from forecourt.domain.service import AppointmentKind, AppointmentStatus
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.errors import AppointmentNotFound, InvalidParams

READ, WRITE = "amcp:service:read", "amcp:service:write"
SETTABLE_STATUSES = (AppointmentStatus.CONFIRMED.value, AppointmentStatus.CANCELLED.value)
DEFAULT_WINDOW = timedelta(days=14)
MAX_WINDOW = timedelta(days=92)

APPOINTMENT: dict[str, Any] = obj(
    {
        "id": ID,
        "kind": {"enum": [k.value for k in AppointmentKind]},
        "status": {"enum": [s.value for s in AppointmentStatus]},
        "start": TIMESTAMP,
        "end": TIMESTAMP,
        "customer_id": NULLABLE_STRING,
        "vehicle_id": NULLABLE_STRING,
        "advisor_id": NULLABLE_STRING,
        "service_codes": {"type": "array", "items": {"type": "string"}},
    }
)


async def _tz(ctx: ExecutionContext, dealership_id: str) -> Any:
    async with ctx.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(dealership_id)
    return zone(dealer.timezone) if dealer else None


async def get_appointment(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One appointment by id, times in the dealership's local offset."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        appt = await uow.service.get_appointment(dealership_id, str(payload["appointment_id"]))
    if appt is None:
        raise AppointmentNotFound()
    return result(appointment_repr(appt, await _tz(ctx, dealership_id)))


def _window(payload: Mapping[str, Any], now: datetime) -> tuple[datetime, datetime]:
    start = parse_rfc3339(str(payload["from"])) if payload.get("from") else now.replace(hour=0, minute=0, second=0)
    start = start.replace(microsecond=0)
    end = parse_rfc3339(str(payload["to"])) if payload.get("to") else start + DEFAULT_WINDOW
    if end <= start or end - start > MAX_WINDOW:
        raise InvalidParams(
            "`to` must be after `from`, at most 92 days later.", details={"errors": [{"path": "/to", "rule": "window"}]}
        )
    return start, end


async def list_appointments(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One page of appointments starting inside a window, earliest first."""
    dealership_id = require_dealership(ctx)
    try:
        start, end = _window(payload, ctx.now)
    except ValueError as exc:
        raise InvalidParams("`from` and `to` must be RFC 3339 times with an offset.") from exc
    page = open_page(ctx.settings, ctx.action.name, dealership_id, payload, now=ctx.now)
    async with ctx.store.transaction() as uow:
        appts, total = await uow.service.list_appointments(dealership_id, start, end, page.offset, page.limit)
    tz = await _tz(ctx, dealership_id)
    items = [appointment_repr(a, tz) for a in appts]
    return result(page_output(items, next_cursor(ctx.settings, page, len(items), total), total), total=total)


async def update_appointment(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Confirm or cancel one appointment."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        appt = await uow.service.get_appointment(dealership_id, str(payload["appointment_id"]))
        if appt is None:
            raise AppointmentNotFound()
        if appt.status.value != payload["status"]:
            appt = appt.model_copy(update={"status": AppointmentStatus(payload["status"]), "updated_at": ctx.now})
            await uow.service.update_appointment(appt)
    return result(appointment_repr(appt, await _tz(ctx, dealership_id)))


ACTIONS = (
    dealer_action(
        "service.get_appointment",
        title="Get a service appointment",
        description=(
            "Fetch one service appointment by `appointment_id`: kind, status (booked, waitlisted, ...), start and "
            "end in the dealership's local offset, customer, vehicle, advisor and service codes. Fails with "
            "service.appointment_not_found. Use it to check an appointment's time and status before confirming it "
            "to a customer."
        ),
        input=input_schema({"appointment_id": ID}, ["appointment_id"]),
        output=output_schema(APPOINTMENT),
        scope=READ,
        tags=("service", "appointment"),
        example={"appointment_id": "appt_tsf_sv0001"},
    ),
    dealer_action(
        "service.list_appointments",
        title="List service appointments",
        description=(
            "List service appointments starting between `from` and `to` (RFC 3339; default: from the start of today "
            "(UTC) for 14 days; at most 92 days), earliest first. Returns {items, next_cursor, total}; pass "
            "next_cursor back for more. Use it to see the service schedule for a day or a week."
        ),
        input=input_schema({"from": TIMESTAMP, "to": TIMESTAMP}, paged=True),
        output=page_schema(APPOINTMENT),
        scope=READ,
        tags=("service", "appointment"),
        example={"from": "2026-12-01T00:00:00-08:00", "to": "2026-12-02T00:00:00-08:00"},
    ),
    dealer_action(
        "service.update_appointment",
        title="Confirm or cancel an appointment",
        description=(
            "Set an appointment's `status` to confirmed or cancelled (by `appointment_id`); answers the "
            "appointment. Fails with service.appointment_not_found. Use it when the customer confirms or cancels."
        ),
        input=input_schema(
            {"appointment_id": ID, "status": {"enum": list(SETTABLE_STATUSES)}}, ["appointment_id", "status"]
        ),
        output=output_schema(APPOINTMENT),
        scope=WRITE,
        side_effect=True,
        tags=("service", "appointment"),
        example={"appointment_id": "appt_tsf_sv0001", "status": "confirmed"},
    ),
)

HANDLERS: dict[str, Handler] = {
    "service.update_appointment": update_appointment,
    "service.get_appointment": get_appointment,
    "service.list_appointments": list_appointments,
}
