"""Small builders for dealer-action tests: tenants, vehicles, customers, repair orders, service slots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.service import RepairLine, RepairOrder, RepairOrderStatus, ServiceSlot
from forecourt.domain.tenancy import Address, Company, DayHours, Dealership, Profile
from forecourt.domain.vehicle import Condition, Vehicle, VehicleStatus
from forecourt.domain.vin import with_check_digit

# Monday 4 May 2026, 09:00 in San Francisco (PDT, UTC-7).
NOW = datetime(2026, 5, 4, 16, 0, tzinfo=UTC)
DEALER = "dealer-a"
OTHER = "dealer-b"
LA = "America/Los_Angeles"


def service_hours() -> dict[str, DayHours]:
    """Mon-Fri 07:00-18:00, Saturday 08:00-12:00, Sunday closed."""
    hours = {d: DayHours(open="07:00", close="18:00") for d in ("monday", "tuesday", "wednesday", "thursday", "friday")}
    hours["saturday"] = DayHours(open="08:00", close="12:00")
    hours["sunday"] = DayHours()
    return hours


def dealership(dealership_id: str = DEALER, **overrides: Any) -> Dealership:
    """A rooftop in Los Angeles time with sales and service hours."""
    data: dict[str, Any] = {
        "id": dealership_id,
        "company_id": "co-1",
        "name": f"Dealer {dealership_id}",
        "timezone": LA,
        "brands": ("Toyota",),
        "address": Address(street="1 Market St", city="San Francisco", region="CA", postal_code="94105"),
        "phones": {"sales": "+14155550100", "service": "+14155550101"},
        "website": "https://dealer.example.com",
        "sales_hours": service_hours(),
        "service_hours": service_hours(),
        "capabilities": ("financing", "trade_in"),
    }
    data.update(overrides)
    return Dealership.model_validate(data)


def tenants() -> tuple[Profile, Company, list[Dealership]]:
    """A profile, a company and two dealerships."""
    return (
        Profile(id="prof-1", name="Profile"),
        Company(id="co-1", profile_id="prof-1", name="Company"),
        [dealership(DEALER), dealership(OTHER, timezone="America/New_York")],
    )


def vin(n: int) -> str:
    """A valid VIN with serial ``n``."""
    return with_check_digit(f"4T1BF1FK0KU{n:06d}")


def vehicle(n: int, *, dealership_id: str = DEALER, **overrides: Any) -> Vehicle:
    """Vehicle ``n``: a used 2022 Toyota Camry LE at $25,000 with 20,000 mi unless overridden."""
    data: dict[str, Any] = {
        "id": f"veh-{dealership_id}-{n}",
        "dealership_id": dealership_id,
        "vin": vin(n if dealership_id == DEALER else n + 5000),
        "stock": f"T{n:05d}",
        "year": 2022,
        "make": "Toyota",
        "model": "Camry",
        "trim": "LE",
        "condition": Condition.USED,
        "body": "sedan",
        "transmission": "automatic",
        "fuel": "gasoline",
        "exterior_color": "Silver",
        "price": 2_500_000,
        "mileage": 20_000,
        "status": VehicleStatus.AVAILABLE,
        "last_verified_at": NOW - timedelta(hours=2),
    }
    data.update(overrides)
    data["price"] = Money.of(data["price"])
    data["mileage"] = Measure(value=data["mileage"])
    return Vehicle.model_validate(data)


def repair_order(n: int, *, dealership_id: str = DEALER, **overrides: Any) -> RepairOrder:
    """An open repair order ``RO-<n>`` with one line."""
    amount = Money.of(8_999)
    data: dict[str, Any] = {
        "id": f"ro-{dealership_id}-{n}",
        "dealership_id": dealership_id,
        "ro_number": f"RO-{n:05d}",
        "status": RepairOrderStatus.OPEN,
        "vin": vin(900 + n),
        "vehicle_description": "2019 Toyota Camry LE",
        "mileage_in": Measure(value=41_000),
        "lines": (RepairLine(code="OIL", description="Oil and filter change", labor_hours=0.5, amount=amount),),
        "total": amount,
        "opened_at": NOW - timedelta(hours=n),
        "updated_at": NOW - timedelta(hours=n),
    }
    data.update(overrides)
    return RepairOrder.model_validate(data)


def slot(start: datetime, *, dealership_id: str = DEALER, minutes: int = 60, **overrides: Any) -> ServiceSlot:
    """A one-bay slot starting at ``start``."""
    data: dict[str, Any] = {
        "id": f"slot-{dealership_id}-{start.astimezone(UTC):%Y%m%d%H%M}-{overrides.get('advisor_id') or 'any'}",
        "dealership_id": dealership_id,
        "start": start,
        "end": start + timedelta(minutes=minutes),
        "capacity": 1,
        "booked": 0,
    }
    data.update(overrides)
    return ServiceSlot.model_validate(data)
