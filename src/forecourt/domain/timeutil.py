"""Aware timestamps, always rendered as RFC 3339 with an offset."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, PlainSerializer


def utcnow() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)


def rfc3339(value: datetime) -> str:
    """RFC 3339 text with an explicit offset (``Z`` is written as ``+00:00``); naive values are refused."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must carry a time zone offset")
    return value.isoformat(timespec="seconds")


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 timestamp; an offset is required."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError("timestamp must carry a time zone offset")
    return parsed


def _require_aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must carry a time zone offset")
    return value


AwareDatetime = Annotated[datetime, AfterValidator(_require_aware), PlainSerializer(rfc3339, return_type=str)]
