"""The ``service.*`` actions: repair orders and booking a service appointment against the slot table."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from forecourt.actions.base import Action, AdapterResult, ExecutionContext, Handler
from forecourt.actions.common import (
    ID,
    MILEAGE,
    MONEY,
    NULLABLE_STRING,
    NULLABLE_TIMESTAMP,
    TIMESTAMP,
    dealer_action,
    input_schema,
    new_id,
    obj,
    opt_str,
    output_schema,
    page_schema,
    require_dealership,
    result,
    str_tuple,
)
from forecourt.actions.representations import repair_order_repr, ts
from forecourt.actions.schedule import alternatives, containing_slot, within_hours, zone
from forecourt.contract.paging import next_cursor, open_page, page_output
from forecourt.domain.service import (
    Appointment,
    AppointmentKind,
    AppointmentStatus,
    RepairOrder,
    RepairOrderStatus,
    ServiceSlot,
)
from forecourt.domain.tenancy import DayHours
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.errors import CustomerNotFound, DealershipNotFound, InvalidParams, RepairOrderNotFound
from forecourt.store.base import UnitOfWork

logger = logging.getLogger(__name__)

READ, WRITE = "amcp:service:read", "amcp:service:write"
LOOK_BEHIND = timedelta(days=7)
LOOK_AHEAD = timedelta(days=14)
DEFAULT_DURATION = timedelta(hours=1)
_RO_SCAN_PAGE = 200

REPAIR_ORDER: dict[str, Any] = obj(
    {
        "id": ID,
        "ro_number": {"type": "string"},
        "status": {"enum": [s.value for s in RepairOrderStatus]},
        "customer_id": NULLABLE_STRING,
        "vin": NULLABLE_STRING,
        "vehicle_description": {"type": "string"},
        "mileage_in": {"anyOf": [MILEAGE, {"type": "null"}]},
        "advisor_id": NULLABLE_STRING,
        "lines": {
            "type": "array",
            "items": obj(
                {
                    "code": {"type": "string"},
                    "description": {"type": "string"},
                    "labor_hours": {"type": "number", "minimum": 0},
                    "amount": MONEY,
                }
            ),
        },
        "total": MONEY,
        "opened_at": TIMESTAMP,
        "promised_at": NULLABLE_TIMESTAMP,
        "closed_at": NULLABLE_TIMESTAMP,
        "updated_at": TIMESTAMP,
    }
)
BOOKING_OUT: dict[str, Any] = output_schema(
    obj(
        {
            "appointment_id": ID,
            "status": {"enum": ["booked", "waitlisted"]},
            "start": TIMESTAMP,
            "end": TIMESTAMP,
            "advisor_id": NULLABLE_STRING,
            "service_codes": {"type": "array", "items": {"type": "string"}},
            "reason": {
                "enum": ["slot_full", "outside_service_hours", "no_slot"],
                "description": "Why the request was waitlisted (absent when booked).",
            },
            "alternatives": {
                "type": "array",
                "maxItems": 3,
                "items": TIMESTAMP,
                "description": "Start times of the nearest free slots inside service hours (local offset).",
            },
        },
        ["appointment_id", "status", "start", "end", "advisor_id", "service_codes", "alternatives"],
    )
)


async def list_repair_orders(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One page of repair orders, optionally with one status."""
    dealership_id = require_dealership(ctx)
    page = open_page(ctx.settings, ctx.action.name, dealership_id, payload, now=ctx.now)
    async with ctx.store.transaction() as uow:
        ros, total = await uow.service.list_repair_orders(
            dealership_id, page.offset, page.limit, opt_str(payload, "status")
        )
    items = [repair_order_repr(ro) for ro in ros]
    return result(page_output(items, next_cursor(ctx.settings, page, len(items), total), total), total=total)


async def _by_ro_number(uow: UnitOfWork, dealership_id: str, ro_number: str) -> RepairOrder | None:
    # The repository has no lookup by RO number; scan pages (ro_number is unique per dealership).
    wanted, offset = ro_number.strip().casefold(), 0
    while True:
        ros, total = await uow.service.list_repair_orders(dealership_id, offset, _RO_SCAN_PAGE)
        for ro in ros:
            if ro.ro_number.casefold() == wanted:
                return ro
        offset += len(ros)
        if not ros or offset >= total:
            return None


async def get_repair_order(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One repair order by id or RO number."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        if payload.get("repair_order_id"):
            ro = await uow.service.get_repair_order(dealership_id, str(payload["repair_order_id"]))
        else:
            ro = await _by_ro_number(uow, dealership_id, str(payload["ro_number"]))
    if ro is None:
        raise RepairOrderNotFound()
    return result(repair_order_repr(ro))


async def _try_book(
    uow: UnitOfWork,
    dealership_id: str,
    slots: Sequence[ServiceSlot],
    start: datetime,
    *,
    advisor_id: str | None,
    hours: Mapping[str, DayHours],
    tz: ZoneInfo,
) -> tuple[ServiceSlot | None, ServiceSlot | None, str | None]:
    """``(booked slot, slot tried, reason)``: books the slot holding ``start`` if it is inside hours and free."""
    if not within_hours(hours, tz, start):
        return None, None, "outside_service_hours"
    slot = containing_slot(slots, start, advisor_id)
    if slot is None:
        return None, None, "no_slot"
    if not within_hours(hours, tz, slot.start, slot.end):
        return None, slot, "outside_service_hours"
    if not slot.free or not await uow.service.book_slot(dealership_id, slot.id):
        return None, slot, "slot_full"
    return slot, slot, None


def _parse_start(payload: Mapping[str, Any], now: datetime) -> datetime:
    try:
        start = parse_rfc3339(str(payload["start"]))
    except ValueError as exc:
        raise InvalidParams("start must be RFC 3339 with an offset.", details={"field": "start"}) from exc
    if start <= now:
        raise InvalidParams("start must be in the future.", details={"field": "start"})
    return start


async def book_appointment(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Book the service slot holding ``start``, or waitlist the request with the nearest alternatives."""
    dealership_id = require_dealership(ctx)
    start = _parse_start(payload, ctx.now)
    advisor_id, customer_id = opt_str(payload, "advisor_id"), opt_str(payload, "customer_id")
    async with ctx.store.transaction() as uow:
        dealership = await uow.tenancy.get_dealership(dealership_id)
        if dealership is None:
            raise DealershipNotFound()
        if customer_id is not None and await uow.customers.get(dealership_id, customer_id) is None:
            raise CustomerNotFound()
        tz = zone(dealership.timezone)
        slots = await uow.service.list_slots(dealership_id, max(ctx.now, start - LOOK_BEHIND), start + LOOK_AHEAD)
        booked, tried, reason = await _try_book(
            uow, dealership_id, slots, start, advisor_id=advisor_id, hours=dealership.service_hours, tz=tz
        )
        others: list[ServiceSlot] = []
        if booked is None:
            others = alternatives(
                slots,
                start,
                now=ctx.now,
                hours=dealership.service_hours,
                tz=tz,
                advisor_id=advisor_id,
                exclude=[tried.id] if tried else [],
            )
        appt = Appointment(
            id=new_id("appt"),
            dealership_id=dealership_id,
            kind=AppointmentKind.SERVICE,
            status=AppointmentStatus.BOOKED if booked else AppointmentStatus.WAITLISTED,
            start=booked.start if booked else start,
            end=booked.end if booked else start + (tried.end - tried.start if tried else DEFAULT_DURATION),
            customer_id=customer_id,
            vehicle_id=str(payload["vehicle_id"]),
            advisor_id=advisor_id or (booked.advisor_id if booked else None),
            service_codes=str_tuple(payload, "service_codes"),
            created_at=ctx.now,
            updated_at=ctx.now,
        )
        await uow.service.add_appointment(appt)
    logger.info("service appointment %s %s for dealership %s", appt.id, appt.status.value, dealership_id)
    out: dict[str, Any] = {
        "appointment_id": appt.id,
        "status": appt.status.value,
        "start": ts(appt.start, tz),
        "end": ts(appt.end, tz),
        "advisor_id": appt.advisor_id,
        "service_codes": list(appt.service_codes),
        "alternatives": [ts(s.start, tz) for s in others],
    }
    if reason is not None:
        out["reason"] = reason
    return result(out)


ACTIONS: tuple[Action, ...] = (
    dealer_action(
        "service.list_repair_orders",
        title="List repair orders",
        description=(
            "List the service department's repair orders, optionally with one `status` (open, in_progress, "
            "waiting_parts, ready, closed). Each has a server `id` and the dealer's `ro_number`; amounts are "
            "integer minor units. Returns {items, next_cursor, total}; pass next_cursor back for more. Use it to "
            "find repair orders by stage, e.g. those ready for pickup."
        ),
        input=input_schema({"status": {"enum": [s.value for s in RepairOrderStatus]}}, paged=True),
        output=page_schema(REPAIR_ORDER),
        scope=READ,
        tags=("service",),
        example={"status": "ready"},
    ),
    dealer_action(
        "service.get_repair_order",
        title="Get a repair order",
        description=(
            "Fetch one repair order by exactly one of `repair_order_id` or `ro_number` (the number on the "
            "customer's paperwork): status, lines, total, promised time. Fails with service.repair_order_not_found. "
            "Use it when a customer asks how the work on their car is going."
        ),
        input=input_schema(
            {"repair_order_id": ID, "ro_number": {"type": "string", "minLength": 1, "maxLength": 64}},
            oneOf=[{"required": ["repair_order_id"]}, {"required": ["ro_number"]}],
        ),
        output=output_schema(REPAIR_ORDER),
        scope=READ,
        tags=("service",),
        example={"ro_number": "RO-1001"},
    ),
    dealer_action(
        "service.book_appointment",
        title="Book a service appointment",
        description=(
            "Book a service-lane appointment for a vehicle at `start` (RFC 3339 with offset, in the future) for the "
            "given service_codes, optionally with an advisor and customer. If the slot holding `start` is inside "
            "the dealership's service hours (its local time zone) and has a free bay it is taken: status `booked` "
            "with the slot's start/end. Otherwise the request is recorded as `waitlisted` with a `reason` and up to "
            "3 `alternatives` (nearest free slot starts inside service hours); call again with one of them to book "
            "it. Never books outside service hours. Use it when a customer wants to bring a vehicle in for service."
        ),
        input=input_schema(
            {
                "vehicle_id": {**ID, "description": "The customer's vehicle (server id or VIN)."},
                "start": TIMESTAMP,
                "service_codes": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 32},
                    "minItems": 1,
                    "maxItems": 20,
                    "description": 'Operation codes, e.g. ["OIL_CHANGE", "TIRE_ROTATION"].',
                },
                "advisor_id": ID,
                "customer_id": ID,
            },
            ["vehicle_id", "start", "service_codes"],
        ),
        output=BOOKING_OUT,
        scope=WRITE,
        side_effect=True,
        idempotent=False,
        timeout_s=10.0,
        tags=("service", "appointment"),
        example={
            "vehicle_id": "4T1B11HK5KU000001",
            "start": "2026-12-01T09:00:00-08:00",
            "service_codes": ["OIL_CHANGE"],
        },
    ),
)

HANDLERS: dict[str, Handler] = {
    "service.list_repair_orders": list_repair_orders,
    "service.get_repair_order": get_repair_order,
    "service.book_appointment": book_appointment,
}
