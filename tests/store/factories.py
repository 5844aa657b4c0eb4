"""Builders for domain objects used by the store contract tests (deterministic, valid VINs)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.people import ConsentGrant, Customer, Lead
from forecourt.domain.service import (
    Appointment,
    AppointmentKind,
    AppointmentStatus,
    RepairOrder,
    RepairOrderStatus,
    ServiceSlot,
)
from forecourt.domain.tenancy import Company, Dealership, Profile
from forecourt.domain.vehicle import Condition, Vehicle
from forecourt.domain.vin import with_check_digit

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
DEALER = "dealer-a"
OTHER_DEALER = "dealer-b"


def vin(n: int) -> str:
    """A valid VIN with serial ``n``."""
    return with_check_digit(f"1HGCM8260JA{n:06d}")


def vehicle(n: int, *, dealership_id: str = DEALER, **overrides: Any) -> Vehicle:
    """Vehicle number ``n`` with sensible defaults (overrides by field name; ``price`` in minor units)."""
    data: dict[str, Any] = {
        "id": f"veh-{dealership_id}-{n}",
        "dealership_id": dealership_id,
        "vin": vin(n),
        "stock": f"T{n:05d}",
        "year": 2022,
        "make": "Toyota",
        "model": "Camry",
        "trim": "LE",
        "condition": Condition.USED,
        "body": "Sedan",
        "transmission": "Automatic",
        "driveline": "FWD",
        "fuel": "Gasoline",
        "exterior_color": "Silver",
        "interior_color": "Black",
        "price": 2_500_000,
        "mileage": 20_000,
        "last_verified_at": T0,
    }
    data.update(overrides)
    data["price"] = Money.of(data["price"])
    data["mileage"] = Measure(value=data["mileage"])
    return Vehicle.model_validate(data)


def tenancy_objects() -> tuple[Profile, Company, list[Dealership]]:
    """A profile, a company and two dealerships."""
    profile = Profile(id="p1", name="Profile One")
    company = Company(id="c1", profile_id="p1", name="Company One")
    dealers = [
        Dealership(id=DEALER, company_id="c1", name="Dealer A", domain="cars.example.com"),
        Dealership(id=OTHER_DEALER, company_id="c1", name="Dealer B"),
    ]
    return profile, company, dealers


def customer(n: int, **overrides: Any) -> Customer:
    """Customer number ``n``."""
    data: dict[str, Any] = {
        "id": f"cust-{n}",
        "dealership_id": DEALER,
        "first_name": "Pat",
        "last_name": f"Buyer{n}",
        "email": f"pat{n}@example.com",
        "phone": f"+1415555{n:04d}",
        "created_at": T0 + timedelta(minutes=n),
        "updated_at": T0 + timedelta(minutes=n),
    }
    data.update(overrides)
    return Customer.model_validate(data)


def consent(n: int, **overrides: Any) -> ConsentGrant:
    """Consent grant number ``n`` (email and SMS allowed)."""
    data: dict[str, Any] = {
        "id": f"consent-{n}",
        "dealership_id": DEALER,
        "customer_id": f"cust-{n}",
        "allowed_channels": ("email", "sms"),
        "granted_at": T0,
        "evidence": {"text": "I agree", "ip_hash": "abc"},
        "created_at": T0 + timedelta(minutes=n),
    }
    data.update(overrides)
    return ConsentGrant.model_validate(data)


def lead(n: int, **overrides: Any) -> Lead:
    """Lead number ``n``."""
    at = T0 + timedelta(minutes=n)
    data: dict[str, Any] = {
        "id": f"lead-{n}",
        "dealership_id": DEALER,
        "customer_id": f"cust-{n}",
        "source": "aap",
        "vehicle_of_interest": {"vin": vin(n), "condition": "used"},
        "trade_in": {"year": 2015, "make": "Honda", "model": "Civic"},
        "fingerprint": f"fp-{n}",
        "submitted_at": at,
        "created_at": at,
        "updated_at": at,
    }
    data.update(overrides)
    return Lead.model_validate(data)


def repair_order(n: int, **overrides: Any) -> RepairOrder:
    """Repair order number ``n`` with one line."""
    data: dict[str, Any] = {
        "id": f"ro-{n}",
        "dealership_id": DEALER,
        "ro_number": f"RO{n:05d}",
        "status": RepairOrderStatus.OPEN,
        "vin": vin(n),
        "mileage_in": {"value": 42_000, "unit": "mi"},
        "lines": [{"code": "OIL", "description": "Oil change", "labor_hours": 0.5, "amount": Money.of(8999)}],
        "total": Money.of(8999),
        "opened_at": T0 + timedelta(hours=n),
        "updated_at": T0 + timedelta(hours=n),
    }
    data.update(overrides)
    return RepairOrder.model_validate(data)


def appointment(n: int, **overrides: Any) -> Appointment:
    """Service appointment number ``n``, ``n`` hours after T0."""
    start = T0 + timedelta(hours=n)
    data: dict[str, Any] = {
        "id": f"appt-{n}",
        "dealership_id": DEALER,
        "kind": AppointmentKind.SERVICE,
        "status": AppointmentStatus.BOOKED,
        "start": start,
        "end": start + timedelta(hours=1),
        "service_codes": ("OIL",),
        "created_at": T0,
        "updated_at": T0,
    }
    data.update(overrides)
    return Appointment.model_validate(data)


def slot(n: int, *, capacity: int = 2, **overrides: Any) -> ServiceSlot:
    """Service slot number ``n``, ``n`` hours after T0."""
    start = T0 + timedelta(hours=n)
    data: dict[str, Any] = {
        "id": f"slot-{n}",
        "dealership_id": DEALER,
        "start": start,
        "end": start + timedelta(hours=1),
        "capacity": capacity,
    }
    data.update(overrides)
    return ServiceSlot.model_validate(data)
