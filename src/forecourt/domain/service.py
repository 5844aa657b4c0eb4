"""The service lane: repair orders, appointments and bookable slots."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.timeutil import AwareDatetime


class AppointmentKind(StrEnum):
    """What an appointment is for."""

    TEST_DRIVE = "test_drive"
    SALES = "sales"
    SERVICE = "service"
    APPRAISAL = "appraisal"


class AppointmentStatus(StrEnum):
    """Lifecycle of an appointment (AAP statuses plus the service lane's)."""

    REQUESTED = "requested"
    PROPOSED = "proposed"
    CONFIRMED = "confirmed"
    BOOKED = "booked"
    WAITLISTED = "waitlisted"
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    NO_SHOW = "no_show"


class Appointment(BaseModel):
    """A time held for a customer at a dealership."""

    model_config = ConfigDict(frozen=True)

    id: str
    dealership_id: str
    kind: AppointmentKind
    status: AppointmentStatus
    start: AwareDatetime
    end: AwareDatetime
    customer_id: str | None = None
    lead_id: str | None = None
    vehicle_id: str | None = None
    advisor_id: str | None = None
    service_codes: tuple[str, ...] = ()
    created_at: AwareDatetime
    updated_at: AwareDatetime


class ServiceSlot(BaseModel):
    """A bookable window in the service lane; ``capacity`` bays, ``booked`` of them taken."""

    model_config = ConfigDict(frozen=True)

    id: str
    dealership_id: str
    start: AwareDatetime
    end: AwareDatetime
    capacity: int = 1
    booked: int = 0
    advisor_id: str | None = None

    @property
    def free(self) -> bool:
        """Whether a bay is still open in this slot."""
        return self.booked < self.capacity


class RepairOrderStatus(StrEnum):
    """Lifecycle of a repair order."""

    OPEN = "open"
    IN_PROGRESS = "in_progress"
    WAITING_PARTS = "waiting_parts"
    READY = "ready"
    CLOSED = "closed"
    UNKNOWN = "unknown"


class RepairLine(BaseModel):
    """One operation on a repair order."""

    model_config = ConfigDict(frozen=True)

    code: str
    description: str
    labor_hours: float = 0.0
    amount: Money


class RepairOrder(BaseModel):
    """A repair order (RO) in the service department."""

    model_config = ConfigDict(frozen=True)

    id: str
    dealership_id: str
    ro_number: str
    status: RepairOrderStatus
    customer_id: str | None = None
    vin: str | None = None
    vehicle_description: str = ""
    mileage_in: Measure | None = None
    advisor_id: str | None = None
    lines: tuple[RepairLine, ...] = ()
    total: Money
    opened_at: AwareDatetime
    promised_at: AwareDatetime | None = None
    closed_at: AwareDatetime | None = None
    updated_at: AwareDatetime
