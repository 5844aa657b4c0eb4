"""Pure lead rules: contact normalisation, duplicate fingerprints and status transitions."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from forecourt.domain.people import ConsentStatus, LeadStatus
from forecourt.errors import InvalidConsentTransition, InvalidLeadTransition

_NON_DIGITS = re.compile(r"\D")

LEAD_TRANSITIONS: dict[LeadStatus, frozenset[LeadStatus]] = {
    LeadStatus.NEW: frozenset(
        {
            LeadStatus.CONTACTED,
            LeadStatus.QUALIFIED,
            LeadStatus.APPOINTMENT_SET,
            LeadStatus.SOLD,
            LeadStatus.LOST,
            LeadStatus.CLOSED,
        }
    ),
    LeadStatus.DUPLICATE: frozenset({LeadStatus.NEW, LeadStatus.CLOSED}),
    LeadStatus.CONTACTED: frozenset(
        {LeadStatus.QUALIFIED, LeadStatus.APPOINTMENT_SET, LeadStatus.SOLD, LeadStatus.LOST, LeadStatus.CLOSED}
    ),
    LeadStatus.QUALIFIED: frozenset(
        {LeadStatus.CONTACTED, LeadStatus.APPOINTMENT_SET, LeadStatus.SOLD, LeadStatus.LOST, LeadStatus.CLOSED}
    ),
    LeadStatus.APPOINTMENT_SET: frozenset(
        {LeadStatus.CONTACTED, LeadStatus.QUALIFIED, LeadStatus.SOLD, LeadStatus.LOST, LeadStatus.CLOSED}
    ),
    LeadStatus.SOLD: frozenset({LeadStatus.CLOSED}),
    LeadStatus.LOST: frozenset({LeadStatus.NEW, LeadStatus.CONTACTED, LeadStatus.CLOSED}),
    LeadStatus.CLOSED: frozenset(),
}
"""Where a lead may go from each status; staying in the same status is always allowed (a no-op)."""


def check_lead_transition(current: LeadStatus, target: LeadStatus) -> None:
    """Raise :class:`InvalidLeadTransition` unless ``current`` → ``target`` is allowed."""
    if target != current and target not in LEAD_TRANSITIONS[current]:
        raise InvalidLeadTransition(details={"from": current.value, "to": target.value})


def check_consent_transition(current: ConsentStatus, target: ConsentStatus) -> None:
    """Raise :class:`InvalidConsentTransition` unless ``current`` → ``target`` is granted → revoked (or a no-op)."""
    if current == target:
        return
    if not (current == ConsentStatus.GRANTED and target == ConsentStatus.REVOKED):
        raise InvalidConsentTransition(details={"from": current.value, "to": target.value})


def normalise_email(email: str | None) -> str | None:
    """Trimmed, lower-cased e-mail address, or ``None`` when empty."""
    if email is None:
        return None
    text = email.strip().lower()
    return text or None


def normalise_phone(phone: str | None, default_country_code: str = "1") -> str | None:
    """An E.164-style ``+<digits>`` number; a bare 10-digit number gets ``default_country_code`` (NANP)."""
    if phone is None:
        return None
    digits = _NON_DIGITS.sub("", phone)
    if not digits:
        return None
    if not phone.strip().startswith("+"):
        if digits.startswith("00"):
            digits = digits[2:]
        elif len(digits) == 10:
            digits = default_country_code + digits
    return "+" + digits


def vehicle_key(vehicle_id: str | None, interest: Mapping[str, Any]) -> str:
    """What a lead is about, for duplicate detection: the vehicle id, else the VIN, else year/make/model."""
    if vehicle_id:
        return f"id:{vehicle_id}"
    vin = interest.get("vin")
    if isinstance(vin, str) and vin.strip():
        return f"vin:{vin.strip().upper()}"
    parts = [str(interest.get(k) or "").strip().casefold() for k in ("year", "make", "model", "trim")]
    return "ymm:" + "|".join(parts) if any(parts) else "none"


def lead_fingerprint(dealership_id: str, email: str | None, phone: str | None, vehicle: str) -> str:
    """A digest of normalised contact (e-mail, else phone) and vehicle key; holds no readable PII."""
    contact = normalise_email(email) or normalise_phone(phone) or ""
    raw = "\x1f".join((dealership_id, contact, vehicle))
    return hashlib.sha256(raw.encode()).hexdigest()[:32]
