"""Customers, their consent, and leads."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from forecourt.domain.timeutil import AwareDatetime

EMAIL_MAX = 254
"""The longest e-mail address (RFC 5321's path limit, less its angle brackets)."""
_LOCAL_MAX = 64
_LOCAL_SYMBOLS = frozenset("!#$%&'*+/=?^_`{|}~.-")


def email_problem(address: str) -> str | None:
    """Why ``address`` is not an e-mail address Forecourt keeps or writes (``None`` when it is one).

    Strict on purpose, without a dependency: no control character or space anywhere (a CR/LF in an address ends
    a mail header and starts another, ``Bcc:`` included), exactly one ``@``, an unquoted local part of letters,
    digits and RFC 5322's symbols with no leading, trailing or double dot (at most 64), a domain of at least two
    labels of letters, digits and inner hyphens (internationalised names allowed) whose last is not a number, and
    at most 254 characters in all. Quoted local parts and address literals (``user@[10.0.0.1]``) are refused.
    """
    if len(address) > EMAIL_MAX:
        return "too_long"
    if any(ch.isspace() or not ch.isprintable() for ch in address):
        return "characters"
    local, at, domain = address.partition("@")
    if not at or "@" in domain:
        return "at_sign"
    if not _local_part_ok(local):
        return "local_part"
    labels = domain.split(".")
    if len(labels) < 2 or labels[-1].isdigit() or not all(_label_ok(label) for label in labels):
        return "domain"
    return None


def _local_part_ok(local: str) -> bool:
    if not local or len(local) > _LOCAL_MAX or local[0] == "." or local[-1] == "." or ".." in local:
        return False
    return all(ch.isalnum() or ch in _LOCAL_SYMBOLS for ch in local)


def _label_ok(label: str) -> bool:
    if not 1 <= len(label) <= 63 or label[0] == "-" or label[-1] == "-":
        return False
    return all(ch.isalnum() or ch == "-" for ch in label)


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
