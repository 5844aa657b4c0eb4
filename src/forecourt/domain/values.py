"""One rule per value, whatever door it comes through: time zones, phone numbers, e-mail addresses, expiry times
and which members an API key can be made for.

Each rule lives here once. The CLI, the admin API, the console, ``forecourt apply`` and the agents' tools reach
it through the models and actions that save the value, so a value one door refuses is refused by every door with
the same field error: ``invalid_params`` (``tenants.invalid_file`` for a whole tenants file) whose
``details.errors[]`` name the field's ``path`` and the ``rule`` (:class:`Rule`). URLs have their rules in
:mod:`forecourt.domain.urls` (``unsafe_url``, ``invalid_link``); e-mail's problems are
:func:`forecourt.domain.people.email_problem`'s.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic_core import PydanticCustomError

from forecourt.domain.people import email_problem
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.errors import InvalidParams

DEFAULT_REGION = "US"
"""The country a phone number without a ``+`` is read in when the rooftop names none."""


class Rule(StrEnum):
    """The ``rule`` a field error names (``details.errors[].rule``)."""

    TIMEZONE = "timezone"
    PHONE = "phone"
    FORMAT = "format"
    """With ``expected`` (``email``, ``date-time``), as a JSON Schema ``format`` error says it."""
    EXPIRED = "expired"
    KEY_NOT_USABLE = "key_not_usable"


def field_error(path: str, rule: Rule, message: str, **extra: Any) -> InvalidParams:
    """The refusal of one value: ``invalid_params`` naming the field (a JSON pointer) and the rule it broke."""
    return InvalidParams(message, details={"errors": [{"path": path, "rule": rule.value, **extra}]})


# ---------------------------------------------------------------------------------------------- time zones


def timezone_problem(name: str) -> str | None:
    """Why ``name`` is not an IANA time zone (``None`` when it is one, e.g. ``America/Chicago``)."""
    if not name or name != name.strip() or len(name) > 64:
        return "not an IANA time zone"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return "not an IANA time zone"
    return None


def checked_timezone(name: str) -> str:
    """``name`` when it is an IANA time zone; a pydantic error of type ``timezone`` otherwise (for models)."""
    problem = timezone_problem(name)
    if problem is not None:
        raise PydanticCustomError(Rule.TIMEZONE.value, problem)
    return name


# ---------------------------------------------------------------------------------------------- phone numbers


def phone_e164(number: str, region: str | None = None) -> str:
    """``number`` in E.164 (``+14155550134``), read in ``region`` (the rooftop's ISO country) unless it starts
    with ``+``; letters of vanity numbers count as their keypad digits (``1-800-FLOWERS``).

    Raises:
        ValueError: not a valid number for its country (never half-normalised: nothing is kept of it).
    """
    import phonenumbers  # a large module: loaded when a number is first checked

    try:
        parsed = phonenumbers.parse(number, (region or DEFAULT_REGION).upper())
    except phonenumbers.NumberParseException:
        raise ValueError("not a phone number") from None
    if not phonenumbers.is_valid_number(parsed):
        raise ValueError("not a valid phone number for its country")
    return str(phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164))


def checked_phones(phones: Mapping[str, str], region: str | None) -> dict[str, str]:
    """A rooftop's numbers by department in E.164; a pydantic error of type ``phone`` names the department."""
    out: dict[str, str] = {}
    for department, number in phones.items():
        try:
            out[department] = phone_e164(number, region)
        except ValueError as exc:
            raise PydanticCustomError(
                Rule.PHONE.value, "{department}: {problem}", {"department": department, "problem": str(exc)}
            ) from None
    return out


def customer_phone(number: str | None, region: str | None, path: str = "/customer/phone") -> str | None:
    """A buyer's phone number in E.164 (``None`` when none was given); a field error at ``path`` otherwise."""
    if number is None or not number.strip():
        return None
    try:
        return phone_e164(number, region)
    except ValueError as exc:
        raise field_error(path, Rule.PHONE, f"{path.strip('/').replace('/', '.')} is {exc}.") from None


# ---------------------------------------------------------------------------------------------- e-mail


def checked_email(address: str) -> str:
    """``address`` when it is an e-mail address; a pydantic error of type ``format`` otherwise (for models)."""
    problem = email_problem(address)
    if problem is not None:
        raise PydanticCustomError(Rule.FORMAT.value, "not an e-mail address ({problem})", {"problem": problem})
    return address


# ---------------------------------------------------------------------------------------------- expiry times


def expiry(text: str, now: datetime, path: str = "/expires_at") -> datetime:
    """An expiry time given as RFC 3339 text, when it is in the future.

    Raises:
        InvalidParams: not an RFC 3339 time with an offset (``format``, ``expected: date-time``), or not after
            ``now`` (``expired``).
    """
    try:
        at = parse_rfc3339(text)
    except ValueError:
        message = "expires_at must be an RFC 3339 time with an offset, e.g. 2027-01-31T00:00:00Z."
        raise field_error(path, Rule.FORMAT, message, expected="date-time") from None
    if at <= now:
        raise field_error(path, Rule.EXPIRED, "expires_at is in the past; give a time in the future.")
    return at


# ---------------------------------------------------------------------------------------------- API keys


def api_key_problem(security_type: str, active: bool) -> str | None:
    """Why a member with this ``security_type`` (``api_key``, ``oidc``, ``mtls``, ``any``) cannot use an API key
    (``None`` when it can): a key made for it would be refused on every call."""
    if not active:
        return "the member is inactive"
    if security_type not in ("api_key", "any"):
        return f"the member signs in with {security_type} only, so an API key would always be refused"
    return None
