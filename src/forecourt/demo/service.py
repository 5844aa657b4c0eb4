"""Deterministic demo service lane: repair orders with lines, service appointments and bookable slots."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from forecourt.demo.catalog import models_for
from forecourt.demo.common import DEMO_MODEL_YEAR, local_slot, sub_rng
from forecourt.demo.inventory import pick_identity, used_mileage
from forecourt.demo.tenants import WEEKDAYS, RooftopPlan
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.people import Customer
from forecourt.domain.service import (
    Appointment,
    AppointmentKind,
    AppointmentStatus,
    RepairLine,
    RepairOrder,
    RepairOrderStatus,
    ServiceSlot,
)
from forecourt.domain.tenancy import Dealership

SLOT_MINUTES = 30
SLOT_DAYS = 14

# (op code, description, labor hours, amount in cents)
OPERATIONS: tuple[tuple[str, str, float, int], ...] = (
    ("LOF", "Synthetic oil and filter change", 0.5, 8995),
    ("ROT", "Tire rotation", 0.3, 3995),
    ("MPI", "Multi-point inspection", 0.3, 0),
    ("BRKF", "Front brake pads and rotors", 1.5, 48900),
    ("ALN", "Four-wheel alignment", 1.0, 16995),
    ("BATT", "Battery test and replacement", 0.4, 24900),
    ("CABF", "Cabin air filter", 0.2, 6995),
    ("ENGF", "Engine air filter", 0.2, 5495),
    ("WIPR", "Wiper blade replacement", 0.1, 3995),
    ("COOL", "Coolant exchange", 1.0, 19995),
    ("TRNS", "Transmission fluid service", 1.2, 27995),
    ("TIRE", "Four tires, mount and balance", 1.5, 98000),
    ("DIAG", "Check-engine light diagnosis", 1.0, 18500),
    ("RECL", "Manufacturer recall campaign", 1.0, 0),
)
_RO_STATUS = (
    (RepairOrderStatus.OPEN, 12),
    (RepairOrderStatus.IN_PROGRESS, 18),
    (RepairOrderStatus.WAITING_PARTS, 8),
    (RepairOrderStatus.READY, 10),
    (RepairOrderStatus.CLOSED, 52),
)


@dataclass
class ServiceBundle:
    """A rooftop's repair orders, service appointments and slots."""

    repair_orders: list[RepairOrder] = field(default_factory=list)
    appointments: list[Appointment] = field(default_factory=list)
    slots: list[ServiceSlot] = field(default_factory=list)


def slot_id(short: str, start: datetime) -> str:
    """Stable slot id from the rooftop and the slot's local start time."""
    return f"slot_{short}_{start.strftime('%Y%m%d_%H%M')}"


def _minutes(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


def generate_slots(
    dealership: Dealership, plan: RooftopPlan, *, now: datetime, days: int = SLOT_DAYS
) -> list[ServiceSlot]:
    """Half-hour service slots over the next ``days`` local days, within service hours, starting after ``now``."""
    slots: list[ServiceSlot] = []
    for offset in range(days):
        weekday = WEEKDAYS[local_slot(now, dealership.timezone, offset, 0).weekday()]
        hours = dealership.service_hours.get(weekday)
        if hours is None or hours.open is None or hours.close is None:
            continue
        for minute in range(_minutes(hours.open), _minutes(hours.close), SLOT_MINUTES):
            start = local_slot(now, dealership.timezone, offset, minute // 60, minute % 60)
            if start <= now:
                continue
            slots.append(
                ServiceSlot(
                    id=slot_id(plan.short, start),
                    dealership_id=dealership.id,
                    start=start,
                    end=start + timedelta(minutes=SLOT_MINUTES),
                    capacity=plan.service_bays,
                    advisor_id=f"adv_{plan.short}_{1 + minute // 60 % 3}",
                )
            )
    return slots


def _lines(rng: random.Random) -> tuple[RepairLine, ...]:
    chosen = rng.sample(OPERATIONS, rng.randint(1, 4))
    return tuple(
        RepairLine(code=code, description=text, labor_hours=hours, amount=Money.of(cents))
        for code, text, hours, cents in chosen
    )


def generate_repair_orders(
    dealership: Dealership, plan: RooftopPlan, customers: list[Customer], count: int, *, seed: int, now: datetime
) -> list[RepairOrder]:
    """Repair orders on customers' vehicles (valid VINs of the rooftop's brands), open and closed."""
    rng = sub_rng(seed, dealership.id, "repair_orders")
    models = models_for(plan.brands)
    serials: set[int] = set()
    orders: list[RepairOrder] = []
    for n in range(count):
        customer = rng.choice(customers) if customers else None
        ident = pick_identity(rng, models, DEMO_MODEL_YEAR - rng.randint(1, 12), serials)
        miles = used_mileage(rng, DEMO_MODEL_YEAR - ident.year)
        status = rng.choices([s for s, _ in _RO_STATUS], weights=[w for _, w in _RO_STATUS])[0]
        closed = status is RepairOrderStatus.CLOSED
        opened = now - timedelta(days=rng.randint(1, 120) if closed else rng.randint(0, 2), hours=rng.randint(0, 9))
        lines = _lines(rng)
        total = Money.of(sum(line.amount.amount_minor for line in lines), dealership.currency)
        closed_after = timedelta(hours=rng.randint(2, 48))
        orders.append(
            RepairOrder(
                id=f"ro_{plan.short}_{n + 1:04d}",
                dealership_id=dealership.id,
                ro_number=f"{plan.stock_prefix}{500_001 + n}",
                status=status,
                customer_id=customer.id if customer else None,
                vin=ident.vin,
                vehicle_description=ident.description,
                mileage_in=Measure(value=miles, unit="mi"),
                advisor_id=f"adv_{plan.short}_{rng.randint(1, 3)}",
                lines=lines,
                total=total,
                opened_at=opened,
                promised_at=opened + timedelta(hours=8),
                closed_at=opened + closed_after if closed else None,
                updated_at=opened + closed_after if closed else opened,
            )
        )
    return orders


def _service_status(
    start: datetime, now: datetime, slot: ServiceSlot | None, past: AppointmentStatus
) -> AppointmentStatus:
    if start < now:
        return past
    if slot is None or not slot.free:
        return AppointmentStatus.WAITLISTED
    return AppointmentStatus.BOOKED


def generate_service(
    dealership: Dealership,
    plan: RooftopPlan,
    customers: list[Customer],
    *,
    repair_orders: int,
    appointments: int,
    seed: int,
    now: datetime,
) -> ServiceBundle:
    """Repair orders, service appointments (future ones take a bay in their slot) and the next two weeks' slots.

    Args:
        dealership: The rooftop (its time zone and service hours are used).
        plan: Its generation plan.
        customers: Customers the orders and appointments belong to.
        repair_orders: How many repair orders.
        appointments: How many service appointments (past ones completed, future ones booked).
        seed: Seed of the service streams.
        now: Anchor of every time in the bundle.
    """
    bundle = ServiceBundle(
        repair_orders=generate_repair_orders(dealership, plan, customers, repair_orders, seed=seed, now=now),
        slots=generate_slots(dealership, plan, now=now),
    )
    by_id = {s.id: s for s in bundle.slots}
    rng = sub_rng(seed, dealership.id, "service_appointments")
    for n in range(appointments):
        customer = rng.choice(customers) if customers else None
        offset, hour, minute = rng.randint(-10, 13), rng.randint(8, 15), rng.choice((0, 30))
        past = rng.choice((AppointmentStatus.COMPLETED,) * 4 + (AppointmentStatus.NO_SHOW, AppointmentStatus.CANCELLED))
        codes = tuple(sorted(code for code, *_ in rng.sample(OPERATIONS, rng.randint(1, 3))))
        start = local_slot(now, dealership.timezone, offset, hour, minute)
        if start.weekday() == 6:  # service is closed on Sundays
            start += timedelta(days=1)
        slot = by_id.get(slot_id(plan.short, start))
        status = _service_status(start, now, slot, past)
        if status is AppointmentStatus.BOOKED and slot is not None:
            by_id[slot.id] = slot.model_copy(update={"booked": slot.booked + 1})
        bundle.appointments.append(
            Appointment(
                id=f"appt_{plan.short}_sv{n + 1:04d}",
                dealership_id=dealership.id,
                kind=AppointmentKind.SERVICE,
                status=status,
                start=start,
                end=start + timedelta(minutes=SLOT_MINUTES),
                customer_id=customer.id if customer else None,
                advisor_id=slot.advisor_id if slot else f"adv_{plan.short}_1",
                service_codes=codes,
                created_at=min(start, now) - timedelta(days=2),
                updated_at=min(start, now) - timedelta(days=2),
            )
        )
    bundle.slots = [by_id[s.id] for s in bundle.slots]
    return bundle
