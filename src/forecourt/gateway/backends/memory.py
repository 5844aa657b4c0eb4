"""In-process backends for one replica (the single-store / SQLite deployment, and tests).

They never fail and share nothing between processes. Time comes from an injected monotonic clock,
so tests advance a fake clock instead of sleeping. Each is safe for concurrent use from one event
loop: no method awaits while it holds state half-updated.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from forecourt import caching
from forecourt.gateway.backends.common import Clock, emission_interval_us, gcra, rate_decision, to_us
from forecourt.gateway.base import IdempotencyEntry, RateDecision

_SWEEP_EVERY = 1024


class MemoryRateLimiter:
    """GCRA limiter (a burst of ``limit`` calls, refilled evenly over ``window_s``) in a dict.

    Args:
        clock: Monotonic clock in seconds.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._tat: dict[str, int] = {}
        self._hits = 0

    async def hit(self, key: str, limit: int, window_s: float) -> RateDecision:
        """Count one call against ``key``; denied calls are not counted."""
        return (await self.hit_many([(key, limit, window_s)]))[0]

    async def hit_many(self, hits: Sequence[tuple[str, int, float]]) -> list[RateDecision]:
        """Count one call against every key, or against none when one of them refuses it."""
        now = to_us(self._clock())
        self._maybe_sweep(now)
        steps = [
            (key, limit, gcra(self._tat.get(key), now, limit, emission_interval_us(limit, window_s)))
            for key, limit, window_s in hits
        ]
        if all(step.allowed for _, _, step in steps):
            for key, _, step in steps:
                self._tat[key] = step.tat_us
        return [rate_decision(limit, s.allowed, s.remaining, s.reset_us, s.retry_us) for _, limit, s in steps]

    def _maybe_sweep(self, now_us: int) -> None:
        # A key whose TAT is in the past is indistinguishable from a missing one, so it can go.
        self._hits += 1
        if self._hits % _SWEEP_EVERY:
            return
        for key in [k for k, tat in self._tat.items() if tat <= now_us]:
            del self._tat[key]


DEFAULT_CACHE_MAX_BYTES = 64 * 1024 * 1024


class MemoryResultCache:
    """Bounded LRU cache with a TTL per entry (a ``forecourt.caching`` cache named ``name``).

    Args:
        max_entries: Least recently used entries are evicted beyond this many.
        clock: Monotonic clock in seconds.
        name: The cache's name in ``/metrics``.
        max_bytes: Least recently used entries are evicted while the stored results hold more bytes than this
            (a page of full vehicles is tens of kilobytes: entries alone would let a worker's memory grow by
            hundreds of megabytes before the bound is reached).
    """

    def __init__(
        self,
        max_entries: int = 10_000,
        clock: Clock = time.monotonic,
        *,
        name: str = "gateway.result_cache",
        max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._data: caching.Cache[str, bytes] = caching.lru(
            name, max_entries, max_age_s=0.0, clock=clock, max_bytes=max_bytes
        )

    async def get(self, key: str) -> bytes | None:
        """The cached value, or ``None`` when absent or expired."""
        return self._data.get(key)

    async def set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Store ``value`` for ``ttl_s`` seconds; a TTL of zero or less removes the key."""
        if ttl_s <= 0:
            self._data.pop(key)
            return
        self._data.put(key, value, max_age_s=ttl_s)

    def __len__(self) -> int:
        return len(self._data)

    @property
    def held_bytes(self) -> int:
        """The bytes of the results held now."""
        return self._data.held_bytes


class MemoryIdempotencyStore:
    """Idempotency records in a dict, each with its own expiry (never evicted before it).

    Args:
        clock: Monotonic clock in seconds.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._data: dict[str, tuple[float, IdempotencyEntry]] = {}
        self._ops = 0

    def _live(self, key: str) -> IdempotencyEntry | None:
        item = self._data.get(key)
        if item is None:
            return None
        if self._clock() >= item[0]:
            del self._data[key]
            return None
        return item[1]

    async def reserve(self, key: str, request_digest: str, ttl_s: float) -> IdempotencyEntry | None:
        """Claim ``key``; returns the existing entry (pending or completed) if it is already claimed."""
        self._maybe_sweep()
        existing = self._live(key)
        if existing is not None:
            return existing
        self._data[key] = (self._clock() + ttl_s, IdempotencyEntry(request_digest, None))
        return None

    async def complete(self, key: str, request_digest: str, response: bytes, ttl_s: float) -> None:
        """Store the response for ``key`` (kept ``ttl_s`` seconds from now)."""
        self._data[key] = (self._clock() + ttl_s, IdempotencyEntry(request_digest, response))

    async def release(self, key: str) -> None:
        """Drop a pending claim; a completed entry is kept, so its response can still be replayed."""
        entry = self._live(key)
        if entry is not None and entry.response is None:
            del self._data[key]

    def _maybe_sweep(self) -> None:
        self._ops += 1
        if self._ops % _SWEEP_EVERY:
            return
        now = self._clock()
        for key in [k for k, (expires_at, _) in self._data.items() if now >= expires_at]:
            del self._data[key]


class MemoryRevocationList:
    """Revoked API-key prefixes for the life of the process."""

    def __init__(self) -> None:
        self._revoked: set[str] = set()

    async def revoke(self, prefix: str) -> None:
        """Mark ``prefix`` revoked."""
        self._revoked.add(prefix)

    async def is_revoked(self, prefix: str) -> bool:
        """Whether ``prefix`` was revoked."""
        return prefix in self._revoked
