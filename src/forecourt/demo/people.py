"""Deterministic demo customers, consented leads and the test drives some of them booked."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from forecourt.demo.catalog import FIRST_NAMES, LAST_NAMES, models_for
from forecourt.demo.common import DEMO_MODEL_YEAR, local_slot, sub_rng
from forecourt.demo.inventory import pick_identity, used_mileage
from forecourt.demo.tenants import RooftopPlan
from forecourt.domain.people import Channel, ConsentGrant, Customer, Lead, LeadStatus
from forecourt.domain.service import Appointment, AppointmentKind, AppointmentStatus
from forecourt.domain.tenancy import Dealership
from forecourt.domain.vehicle import Vehicle, VehicleStatus

_POSTAL = {
    "tsf": ("94103", "94107", "94110", "94114", "94117", "94122", "94015", "94080"),
    "hoak": ("94601", "94606", "94610", "94611", "94618", "94501", "94702", "94541"),
    "bsj": ("95112", "95118", "95125", "95129", "95008", "95050", "94086", "95035"),
}
_LEAD_STATUS = (
    (LeadStatus.NEW, 40),
    (LeadStatus.CONTACTED, 22),
    (LeadStatus.QUALIFIED, 10),
    (LeadStatus.APPOINTMENT_SET, 12),
    (LeadStatus.SOLD, 6),
    (LeadStatus.LOST, 6),
    (LeadStatus.CLOSED, 4),
)
_SOURCES = (("aap", 45), ("website", 25), ("phone", 10), ("third_party", 15), ("walk_in", 5))
_BUYER_AGENTS = ("shopper-agent", "gemini-assistant", "chatgpt-shopping", "claude-car-buyer")
_TRADE_CONDITIONS = ("excellent", "good", "good", "fair", "poor")
_MESSAGES = (
    "Is this still available? I'd like to schedule a test drive this weekend.",
    "What is the out-the-door price? I'm paying cash.",
    "Can you send more photos of the interior?",
    "I'd like to know what my trade-in is worth.",
    "Do you offer home delivery?",
    None,
)


@dataclass
class LeadBundle:
    """Leads with their consent grants and the test-drive appointments some of them set."""

    leads: list[Lead] = field(default_factory=list)
    consents: list[ConsentGrant] = field(default_factory=list)
    appointments: list[Appointment] = field(default_factory=list)


def _pick(rng: random.Random, table: tuple[tuple[Any, int], ...]) -> Any:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


def customer_phone(plan: RooftopPlan, n: int) -> str:
    """A fictional 555-01xx number (0110-0199; 0100-0102 are the rooftop's own lines)."""
    area = plan.area_codes[(n // 90) % len(plan.area_codes)]
    return f"+1{area}5550{110 + n % 90}"


def generate_customers(
    dealership: Dealership, plan: RooftopPlan, count: int, *, seed: int, now: datetime
) -> list[Customer]:
    """Fictional customers: names from built-in lists, ``example.com``/``example.net`` e-mail, 555 phones."""
    rng = sub_rng(seed, dealership.id, "customers")
    customers: list[Customer] = []
    for n in range(count):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        domain = rng.choice(("example.com", "example.com", "example.net"))
        created = now - timedelta(days=rng.randint(1, 900), minutes=rng.randint(0, 1439))
        customers.append(
            Customer(
                id=f"cus_{plan.short}_{n + 1:04d}",
                dealership_id=dealership.id,
                first_name=first,
                last_name=last,
                email=f"{first}.{last}{n + 1}@{domain}".lower(),
                phone=customer_phone(plan, n),
                postal_code=rng.choice(_POSTAL[plan.short]),
                preferred_channel=rng.choice((Channel.EMAIL, Channel.PHONE, Channel.SMS, None)),
                created_at=created,
                updated_at=created + timedelta(days=rng.randint(0, 30)),
            )
        )
    return customers


def _vehicle_of_interest(vehicle: Vehicle) -> dict[str, Any]:
    return {
        "vin": vehicle.vin,
        "stock": vehicle.stock,
        "year": vehicle.year,
        "make": vehicle.make,
        "model": vehicle.model,
        "trim": vehicle.trim,
        "condition": vehicle.condition.value,
        "price": vehicle.price.to_aap(),
    }


def _trade_in(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() >= 0.35:
        return None
    year = DEMO_MODEL_YEAR - rng.randint(3, 12)
    ident = pick_identity(rng, models_for(()), year, set())
    return {
        "year": ident.year,
        "make": ident.spec.make,
        "model": ident.spec.model,
        "trim": ident.trim.name,
        "vin": ident.vin,
        "mileage": used_mileage(rng, DEMO_MODEL_YEAR - ident.year),
        "condition": rng.choice(_TRADE_CONDITIONS),
    }


def _consent(
    dealership: Dealership,
    ids: tuple[str, str],
    customer: Customer,
    agent: str | None,
    *,
    at: datetime,
    rng: random.Random,
) -> ConsentGrant:
    consent_id, lead_id = ids
    channels = rng.choice(
        (
            (Channel.EMAIL,),
            (Channel.EMAIL, Channel.PHONE),
            (Channel.PHONE, Channel.SMS),
            (Channel.EMAIL, Channel.PHONE, Channel.SMS),
        )
    )
    names = " or ".join(c.value for c in channels)
    text = (
        f"I authorize {dealership.name} to contact me by {names} about my inquiry. "
        "I understand I can withdraw consent at any time."
    )
    return ConsentGrant(
        id=consent_id,
        dealership_id=dealership.id,
        customer_id=customer.id,
        lead_id=lead_id,
        scope=("lead_submission",),
        allowed_channels=channels,
        granted_at=at,
        expires_at=at + timedelta(days=365),
        source_agent=agent,
        evidence={"consent_text": text, "captured_by": agent or "dealer website"},
        created_at=at,
    )


def _test_drive(
    dealership: Dealership, appt_id: str, lead: Lead, vehicle: Vehicle, *, rng: random.Random, now: datetime
) -> Appointment:
    start = local_slot(now, dealership.timezone, rng.randint(-5, 10), rng.randint(9, 17), rng.choice((0, 30)))
    past_status = rng.choice((AppointmentStatus.COMPLETED, AppointmentStatus.COMPLETED, AppointmentStatus.NO_SHOW))
    status = past_status if start < now else AppointmentStatus.CONFIRMED
    return Appointment(
        id=appt_id,
        dealership_id=dealership.id,
        kind=AppointmentKind.TEST_DRIVE,
        status=status,
        start=start,
        end=start + timedelta(minutes=60),
        customer_id=lead.customer_id,
        lead_id=lead.id,
        vehicle_id=vehicle.id,
        created_at=lead.submitted_at,
        updated_at=lead.submitted_at,
    )


def generate_leads(
    dealership: Dealership,
    plan: RooftopPlan,
    customers: list[Customer],
    vehicles: list[Vehicle],
    count: int,
    *,
    seed: int,
    now: datetime,
) -> LeadBundle:
    """Leads on offerable vehicles, each with its customer's consent grant; ``appointment_set`` ones get a test drive.

    Args:
        dealership: The rooftop.
        plan: Its generation plan (id prefixes).
        customers: Customers to attach leads to (one lead per customer at most, in order).
        vehicles: The rooftop's inventory; leads point at offerable units.
        count: How many leads (capped by the number of customers).
        seed: Seed of the leads stream.
        now: Anchor of time-relative fields.
    """
    rng = sub_rng(seed, dealership.id, "leads")
    offerable = [v for v in vehicles if v.status in (VehicleStatus.AVAILABLE, VehicleStatus.IN_TRANSIT)]
    bundle = LeadBundle()
    for n, customer in enumerate(customers[:count]):
        lead_id, consent_id = f"lead_{plan.short}_{n + 1:04d}", f"cons_{plan.short}_{n + 1:04d}"
        source = _pick(rng, _SOURCES)
        agent = rng.choice(_BUYER_AGENTS) if source == "aap" else None
        submitted = now - timedelta(minutes=rng.randint(10, 30 * 24 * 60))
        vehicle = rng.choice(offerable) if offerable else None
        status = _pick(rng, _LEAD_STATUS)
        trade_in = _trade_in(rng)
        appt_id = f"appt_{plan.short}_td{n + 1:04d}" if status is LeadStatus.APPOINTMENT_SET and vehicle else None
        lead = Lead(
            id=lead_id,
            dealership_id=dealership.id,
            customer_id=customer.id,
            status=status,
            source=source,
            source_agent=agent,
            vehicle_id=vehicle.id if vehicle else None,
            vehicle_of_interest=_vehicle_of_interest(vehicle) if vehicle else {},
            trade_in=trade_in,
            message=rng.choice(_MESSAGES),
            consent_id=consent_id,
            appointment_id=appt_id,
            submitted_at=submitted,
            created_at=submitted,
            updated_at=submitted + timedelta(minutes=rng.randint(0, 600)),
        )
        bundle.leads.append(lead)
        bundle.consents.append(_consent(dealership, (consent_id, lead_id), customer, agent, at=submitted, rng=rng))
        if appt_id and vehicle:
            bundle.appointments.append(_test_drive(dealership, appt_id, lead, vehicle, rng=rng, now=now))
    return bundle
