"""Appointment reads the MCP resources need: ``service.get_appointment`` and ``service.list_appointments``.

They are ordinary catalogue actions (so policy, tenancy, audit and rate limits apply to resource
reads exactly as to tool calls), run by their own small adapter over the store's service repository.
``register_appointment_actions(catalogue)`` adds both and the adapter; names are skipped when another
module already registered them (so the dealer actions can adopt them later without a clash).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from forecourt.actions.base import AdapterResult, Catalogue, ExecutionContext, Handler
from forecourt.actions.dealer.common import (
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
from forecourt.actions.dealer.representations import appointment_repr
from forecourt.actions.dealer.schedule import zone
from forecourt.actions.paging import next_cursor, open_page, page_output
from forecourt.domain.service import AppointmentKind, AppointmentStatus
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.errors import AppointmentNotFound, InvalidParams, UnknownAction

ADAPTER_ID = "service-appointments"
READ = "amcp:service:read"
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


ACTIONS = (
    dealer_action(
        "service.get_appointment",
        title="Get a service appointment",
        description=(
            "Fetch one service appointment by `appointment_id`: kind, status (booked, waitlisted, ...), start "
            "and end in the dealership's local offset, customer, vehicle, advisor and service codes. Fails "
            "with service.appointment_not_found."
        ),
        input=input_schema({"appointment_id": ID}, ["appointment_id"]),
        output=output_schema(APPOINTMENT),
        scope=READ,
        tags=("service", "appointment"),
    ),
    dealer_action(
        "service.list_appointments",
        title="List service appointments",
        description=(
            "List service appointments starting between `from` and `to` (RFC 3339; default: from the start of "
            "today (UTC) for 14 days; at most 92 days), earliest first. Returns {items, next_cursor, total}; "
            "pass next_cursor back for more."
        ),
        input=input_schema({"from": TIMESTAMP, "to": TIMESTAMP}, paged=True),
        output=page_schema(APPOINTMENT),
        scope=READ,
        tags=("service", "appointment"),
    ),
)

HANDLERS: dict[str, Handler] = {
    "service.get_appointment": get_appointment,
    "service.list_appointments": list_appointments,
}


class AppointmentAdapter:
    """Runs the two appointment reads (the gateway has already resolved and authorized the dealership)."""

    id = ADAPTER_ID

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the handler of ``context.action``."""
        handler = HANDLERS.get(context.action.name)
        if handler is None:
            raise UnknownAction(details={"action": context.action.name})
        return await handler(payload, context)


def register_appointment_actions(catalogue: Catalogue) -> None:
    """Add the appointment reads (unless already present) and their adapter to ``catalogue``."""
    for action in ACTIONS:
        if catalogue.get(action.name) is None:
            catalogue.add(replace(action, adapter=ADAPTER_ID))
    catalogue.add_adapter(AppointmentAdapter())
