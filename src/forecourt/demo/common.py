"""Seeded randomness and stable identifiers shared by the demo generators."""

from __future__ import annotations

import hashlib
import random
import re
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

DEFAULT_SEED = 2026
# Model years are anchored to a constant, not to the clock, so VINs and prices never drift with time.
DEMO_MODEL_YEAR = 2026

_SLUG = re.compile(r"[^a-z0-9]+")


def sub_rng(seed: int, *parts: str) -> random.Random:
    """An independent generator for one stream (``seed`` plus a purpose), stable across runs and platforms.

    Separate streams keep, say, the inventory identical when the number of customers changes.
    """
    digest = hashlib.sha256(repr((seed, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))  # noqa: S311 - demo data, not secrets


def slug(text: str) -> str:
    """Lower-case, dash-separated URL slug."""
    return _SLUG.sub("-", text.lower()).strip("-")


def default_now() -> datetime:
    """The current time in UTC, truncated to the minute (time-relative demo data is anchored here)."""
    return datetime.now(UTC).replace(second=0, microsecond=0)


def local_slot(now: datetime, timezone: str, day_offset: int, hour: int, minute: int = 0) -> datetime:
    """``hour:minute`` local time in ``timezone``, ``day_offset`` days from ``now``'s local date (aware)."""
    zone = ZoneInfo(timezone)
    day = now.astimezone(zone).date() + timedelta(days=day_offset)
    return datetime.combine(day, time(hour, minute), tzinfo=zone)
