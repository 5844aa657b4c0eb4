"""Repair orders, appointments, service slots and trade valuations in SQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from forecourt.domain.deals import TradeValuation
from forecourt.domain.events import ChangeType, ResourceType
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.service import Appointment, RepairOrder, ServiceSlot
from forecourt.errors import AlreadyExists, AppointmentNotFound, RepairOrderNotFound
from forecourt.store.sql.context import TxContext, dump, row_dict
from forecourt.store.sql.tables import appointments, repair_orders, service_slots, trade_valuations

_R = repair_orders.c
_A = appointments.c
_S = service_slots.c


def _ro_row(ro: RepairOrder) -> dict[str, Any]:
    row = dump(ro, ("lines",), exclude=("total", "mileage_in"))
    row["total_minor"] = ro.total.amount_minor
    row["total_currency"] = ro.total.currency
    row["mileage_in_value"] = ro.mileage_in.value if ro.mileage_in else None
    row["mileage_in_unit"] = ro.mileage_in.unit if ro.mileage_in else None
    return row


def _ro(row: sa.Row[Any]) -> RepairOrder:
    data = row_dict(row, exclude=("total_minor", "total_currency", "mileage_in_value", "mileage_in_unit"))
    m = row._mapping
    data["total"] = Money(amount_minor=m["total_minor"], currency=m["total_currency"])
    if m["mileage_in_value"] is not None:
        data["mileage_in"] = Measure(value=m["mileage_in_value"], unit=m["mileage_in_unit"] or "mi")
    return RepairOrder.model_validate(data)


def _appt_row(appt: Appointment) -> dict[str, Any]:
    row = dump(appt, ("service_codes",), exclude=("start", "end"))
    row["starts_at"] = appt.start
    row["ends_at"] = appt.end
    return row


def _renamed(row: sa.Row[Any]) -> dict[str, Any]:
    data = row_dict(row, exclude=("starts_at", "ends_at"))
    data["start"] = row._mapping["starts_at"]
    data["end"] = row._mapping["ends_at"]
    return data


def _slot_row(slot: ServiceSlot) -> dict[str, Any]:
    row = dump(slot, exclude=("start", "end"))
    row["starts_at"] = slot.start
    row["ends_at"] = slot.end
    return row


def _valuation_row(valuation: TradeValuation) -> dict[str, Any]:
    row = dump(valuation, exclude=("low", "estimate", "high"))
    row["low_minor"] = valuation.low.amount_minor
    row["estimate_minor"] = valuation.estimate.amount_minor
    row["high_minor"] = valuation.high.amount_minor
    row["currency"] = valuation.estimate.currency
    return row


class SqlServiceRepository:
    """:class:`~forecourt.store.base.ServiceRepository` over the service-lane tables."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def add_repair_order(self, ro: RepairOrder) -> None:
        """Store a new repair order; ``AlreadyExists`` if its id or RO number is taken."""
        await self._ctx.lock_outbox()
        if not await self._ctx.insert_ignore(repair_orders, _ro_row(ro)):
            raise AlreadyExists()
        await self._emit_ro(ro, ChangeType.CREATED, ro.opened_at)

    async def update_repair_order(self, ro: RepairOrder) -> None:
        """Replace a repair order; ``RepairOrderNotFound`` if there is none."""
        await self._ctx.lock_outbox()
        where = (_R.id == ro.id, _R.dealership_id == ro.dealership_id)
        if not await self._ctx.update_where(repair_orders, where, _ro_row(ro)):
            raise RepairOrderNotFound()
        await self._emit_ro(ro, ChangeType.UPDATED, ro.updated_at)

    async def _emit_ro(self, ro: RepairOrder, change: ChangeType, at: datetime) -> None:
        await self._ctx.emit(
            ro.dealership_id,
            ResourceType.REPAIR_ORDER,
            ro.id,
            change,
            at,
            status=ro.status.value,
            payload={"ro_number": ro.ro_number},
        )

    async def get_repair_order(self, dealership_id: str, ro_id: str) -> RepairOrder | None:
        """A repair order by id."""
        stmt = sa.select(repair_orders).where(_R.dealership_id == dealership_id, _R.id == ro_id)
        row = (await self._ctx.conn.execute(stmt)).first()
        return _ro(row) if row else None

    async def list_repair_orders(
        self, dealership_id: str, offset: int, limit: int, status: str | None = None
    ) -> tuple[list[RepairOrder], int]:
        """A page of repair orders (optionally of one status), most recently opened first, and the total."""
        where = [_R.dealership_id == dealership_id]
        if status is not None:
            where.append(_R.status == status)
        stmt = sa.select(repair_orders).where(*where).order_by(_R.opened_at.desc(), _R.id.desc())
        rows = await self._ctx.conn.execute(stmt.offset(offset).limit(limit))
        total = await self._ctx.conn.execute(sa.select(sa.func.count()).select_from(repair_orders).where(*where))
        return [_ro(r) for r in rows], int(total.scalar_one())

    async def add_appointment(self, appt: Appointment) -> None:
        """Store a new appointment; ``AlreadyExists`` if the id is taken."""
        await self._ctx.lock_outbox()
        if not await self._ctx.insert_ignore(appointments, _appt_row(appt)):
            raise AlreadyExists()
        await self._emit_appt(appt, ChangeType.CREATED, appt.created_at)

    async def update_appointment(self, appt: Appointment) -> None:
        """Replace an appointment; ``AppointmentNotFound`` if there is none."""
        await self._ctx.lock_outbox()
        where = (_A.id == appt.id, _A.dealership_id == appt.dealership_id)
        if not await self._ctx.update_where(appointments, where, _appt_row(appt)):
            raise AppointmentNotFound()
        await self._emit_appt(appt, ChangeType.UPDATED, appt.updated_at)

    async def _emit_appt(self, appt: Appointment, change: ChangeType, at: datetime) -> None:
        await self._ctx.emit(
            appt.dealership_id,
            ResourceType.APPOINTMENT,
            appt.id,
            change,
            at,
            status=appt.status.value,
            payload={"kind": appt.kind.value},
        )

    async def get_appointment(self, dealership_id: str, appointment_id: str) -> Appointment | None:
        """An appointment by id."""
        stmt = sa.select(appointments).where(_A.dealership_id == dealership_id, _A.id == appointment_id)
        row = (await self._ctx.conn.execute(stmt)).first()
        return Appointment.model_validate(_renamed(row)) if row else None

    async def list_appointments(
        self, dealership_id: str, start: datetime, end: datetime, offset: int = 0, limit: int = 100
    ) -> tuple[list[Appointment], int]:
        """Appointments starting in ``[start, end)``, earliest first, and how many there are."""
        where = (_A.dealership_id == dealership_id, _A.starts_at >= start, _A.starts_at < end)
        stmt = sa.select(appointments).where(*where).order_by(_A.starts_at, _A.id).offset(offset).limit(limit)
        rows = await self._ctx.conn.execute(stmt)
        total = await self._ctx.conn.execute(sa.select(sa.func.count()).select_from(appointments).where(*where))
        return [Appointment.model_validate(_renamed(r)) for r in rows], int(total.scalar_one())

    async def add_slots(self, slots: Sequence[ServiceSlot]) -> None:
        """Store bookable slots; slots whose id already exists are left as they are."""
        await self._ctx.insert_many_ignore(service_slots, [_slot_row(s) for s in slots])

    async def list_slots(self, dealership_id: str, start: datetime, end: datetime) -> list[ServiceSlot]:
        """Slots starting in ``[start, end)``, earliest first, full ones included."""
        where = (_S.dealership_id == dealership_id, _S.starts_at >= start, _S.starts_at < end)
        stmt = sa.select(service_slots).where(*where).order_by(_S.starts_at, _S.id)
        return [ServiceSlot.model_validate(_renamed(r)) for r in await self._ctx.conn.execute(stmt)]

    async def book_slot(self, dealership_id: str, slot_id: str) -> bool:
        """Take one bay in a slot with a single conditional UPDATE; False when it is full or unknown."""
        where = (_S.dealership_id == dealership_id, _S.id == slot_id, _S.booked < _S.capacity)
        return await self._ctx.update_where(service_slots, where, {"booked": _S.booked + 1}) == 1

    async def add_valuation(self, valuation: TradeValuation) -> None:
        """Store a trade-in valuation; ``AlreadyExists`` if the id is taken."""
        if not await self._ctx.insert_ignore(trade_valuations, _valuation_row(valuation)):
            raise AlreadyExists()
