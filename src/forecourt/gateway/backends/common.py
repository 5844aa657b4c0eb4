"""Pieces shared by the in-memory and Redis backends: the GCRA arithmetic, the idempotency record codec,
and a throttled warning for a shared store that is down.

The GCRA (generic cell rate algorithm, an exact token bucket) runs in integer microseconds so that the
Python version (memory backend) and the Lua version (Redis backend) give the same answers to the last
digit. One value per key is stored: the theoretical arrival time (TAT) of the next call.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import NamedTuple

from forecourt.gateway.base import IdempotencyEntry, RateDecision

Clock = Callable[[], float]
"""A monotonic clock in seconds (``time.monotonic`` in production, a fake one in tests)."""

US = 1_000_000


def to_us(seconds: float) -> int:
    """Seconds to whole microseconds (rounded, so ``0.1`` steps of a fake clock stay exact)."""
    return round(seconds * US)


def ttl_ms(ttl_s: float) -> int:
    """A positive TTL in whole milliseconds for Redis ``PX`` (never 0, which Redis rejects)."""
    return max(1, math.ceil(ttl_s * 1000))


def emission_interval_us(limit: int, window_s: float) -> int:
    """Microseconds one call "costs"; rounded up so a window never admits more than ``limit`` calls."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if window_s <= 0:
        raise ValueError("window_s must be positive")
    return max(1, -(-to_us(window_s) // limit))


class GcraStep(NamedTuple):
    """One GCRA decision; ``tat_us`` is the value to store (only when ``allowed``). A tuple: built on every call."""

    allowed: bool
    tat_us: int
    remaining: int
    reset_us: int
    retry_us: int


def gcra(stored_tat_us: int | None, now_us: int, limit: int, interval_us: int) -> GcraStep:
    """Count one call: a burst of ``limit`` calls, refilled at one per ``interval_us``.

    Mirrors ``_GCRA_LUA`` in the Redis backend line for line; change both together.
    """
    tat = now_us if stored_tat_us is None or stored_tat_us < now_us else stored_tat_us
    tolerance = interval_us * limit
    new_tat = tat + interval_us
    allow_at = new_tat - tolerance
    if now_us < allow_at:
        return GcraStep(False, tat, 0, tat - now_us, allow_at - now_us)
    remaining = (now_us + tolerance - new_tat) // interval_us
    return GcraStep(True, new_tat, remaining, new_tat - now_us, 0)


def rate_decision(limit: int, allowed: bool, remaining: int, reset_us: int, retry_us: int) -> RateDecision:
    """The gateway's view of a GCRA step."""
    return RateDecision(
        allowed=allowed,
        limit=limit,
        remaining=max(0, remaining),
        reset_after_s=max(0, reset_us) / US,
        retry_after_s=max(0, retry_us) / US,
    )


_PENDING = b"P"
_DONE = b"D"


def encode_entry(request_digest: str, response: bytes | None) -> bytes:
    """``P|D`` + digest length + ``:`` + digest + response: one string, so a reservation is one atomic key."""
    digest = request_digest.encode()
    state = _PENDING if response is None else _DONE
    return state + str(len(digest)).encode() + b":" + digest + (response or b"")


def decode_entry(raw: bytes) -> IdempotencyEntry:
    """The inverse of :func:`encode_entry`."""
    state, rest = raw[:1], raw[1:]
    length, _, rest = rest.partition(b":")
    size = int(length)
    digest = rest[:size].decode()
    return IdempotencyEntry(request_digest=digest, response=None if state == _PENDING else rest[size:])


class WarnThrottle:
    """Logs "shared store unavailable" at most once per interval, and once when it recovers.

    Args:
        logger: The module logger to write to.
        what: What degraded (``"rate limiter"``, ``"result cache"`` ...); never a URL or credential.
        interval_s: The least time between two warnings.
        clock: Monotonic clock (injectable for tests).
    """

    def __init__(self, logger: logging.Logger, what: str, interval_s: float = 30.0, clock: Clock = time.monotonic):
        self._logger = logger
        self._what = what
        self._interval_s = interval_s
        self._clock = clock
        self._last: float | None = None
        self._suppressed = 0
        self.failing = False

    def failed(self, exc: BaseException, consequence: str) -> None:
        """Record one failed call; warn if the last warning is old enough."""
        self.failing = True
        now = self._clock()
        if self._last is not None and now - self._last < self._interval_s:
            self._suppressed += 1
            return
        self._logger.warning(
            "Redis unavailable for the %s (%s); %s (%d similar failures since the last warning)",
            self._what,
            type(exc).__name__,
            consequence,
            self._suppressed,
        )
        self._last = now
        self._suppressed = 0

    def succeeded(self) -> None:
        """Record a successful call; logs the recovery once."""
        if self.failing:
            self.failing = False
            self._last = None
            self._suppressed = 0
            self._logger.info("Redis reachable again for the %s", self._what)
