"""Customers, their consent, and leads."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from forecourt.domain.timeutil import AwareDatetime


class Channel(StrEnum):
    """Contact channels a customer can consent to."""

    EMAIL = "email"
    PHONE = "phone"
    SMS = "sms"


class Customer(BaseModel):
    """A person known to a dealership. Every field but the ids is PII."""

    model_config = ConfigDict(frozen=True)

    id: str
    dealership_id: str
    first_name: str = ""
    last_name: str = ""
    email: str | None = None
    phone: str | None = None
    postal_code: str | None = None
    preferred_channel: Channel | None = None
    created_at: AwareDatetime
    updated_at: AwareDatetime
    possible_duplicate_of: str | None = None
    """An earlier customer who shares this one's e-mail or phone under another name: the dealer decides whether
    they are one person (the lead intake never merges people on contact details alone)."""

    @property
    def full_name(self) -> str:
        """First and last name joined."""
        return f"{self.first_name} {self.last_name}".strip()


class ConsentStatus(StrEnum):
    """Lifecycle of a consent grant."""

    GRANTED = "granted"
    REVOKED = "revoked"
    EXPIRED = "expired"


class ConsentGrant(BaseModel):
    """A customer's consent to be contacted, kept as an audit record exactly as it was given."""

    model_config = ConfigDict(frozen=True)

    id: str
    dealership_id: str
    customer_id: str | None = None
    lead_id: str | None = None
    scope: tuple[str, ...] = ("lead_submission",)
    allowed_channels: tuple[Channel, ...] = ()
    granted_at: AwareDatetime
    expires_at: AwareDatetime | None = None
    status: ConsentStatus = ConsentStatus.GRANTED
    source_agent: str | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)
    created_at: AwareDatetime


class LeadStatus(StrEnum):
    """Lifecycle of a lead in the dealership."""

    NEW = "new"
    DUPLICATE = "duplicate"
    CONTACTED = "contacted"
    QUALIFIED = "qualified"
    APPOINTMENT_SET = "appointment_set"
    SOLD = "sold"
    LOST = "lost"
    CLOSED = "closed"


class Lead(BaseModel):
    """A buyer's expressed interest, with what they want, what they trade and how to reach them."""

    model_config = ConfigDict(frozen=True)

    id: str
    dealership_id: str
    customer_id: str | None = None
    status: LeadStatus = LeadStatus.NEW
    source: str = "unknown"
    source_agent: str | None = None
    vehicle_id: str | None = None
    vehicle_of_interest: dict[str, Any] = Field(default_factory=dict)
    trade_in: dict[str, Any] | None = None
    message: str | None = None
    consent_id: str | None = None
    appointment_id: str | None = None
    duplicate_of: str | None = None
    idempotency_key: str | None = None
    assigned_to: str | None = None
    fingerprint: str | None = None
    submitted_at: AwareDatetime
    created_at: AwareDatetime
    updated_at: AwareDatetime
