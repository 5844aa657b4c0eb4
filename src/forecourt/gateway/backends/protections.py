"""Shared state of the gateway's protections: tainted sessions and budget meters (memory, and Redis for replicas).

- :class:`SessionTaint`: the sessions (an MCP session, an A2A context, an envelope ``caller.sessionId``) that have
  received output carrying third-party text; kept ``ttl_s`` after the last such output. Redis keys
  ``<prefix>taint:<sha256 of company and session>``.
- :class:`BudgetMeters`: counters per subject and period (``calls``, ``tokens_in``, ``tokens_out``,
  ``spend_minor``), added to atomically; a period's key expires after the period ends, which is the reset.
  Redis hashes ``<prefix>budget:<period>:<subject>``.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import redis.asyncio as aioredis

TAINT_TTL_S = 24 * 3600
_MAX_MEMORY_ENTRIES = 100_000


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:40]


class SessionTaint(Protocol):
    """Sessions that have read untrusted output."""

    async def taint(self, company_id: str, session_id: str) -> None: ...
    async def tainted(self, company_id: str, session_id: str) -> bool: ...


class BudgetMeters(Protocol):
    """Counters per budget key (a subject in one period)."""

    async def add(self, key: str, amounts: dict[str, int], expires_at: float) -> dict[str, int]:
        """Add ``amounts`` (may be negative) and return every counter of ``key`` after the addition."""
        ...

    async def read(self, keys: list[str]) -> list[dict[str, int]]:
        """The counters of each key (empty when it has none)."""
        ...


class MemorySessionTaint:
    """Tainted sessions in this process (bounded; the oldest go first)."""

    def __init__(self, ttl_s: float = TAINT_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._until: OrderedDict[str, float] = OrderedDict()

    async def taint(self, company_id: str, session_id: str) -> None:
        """Mark the session."""
        key = _digest(company_id, session_id)
        self._until[key] = time.monotonic() + self.ttl_s
        self._until.move_to_end(key)
        while len(self._until) > _MAX_MEMORY_ENTRIES:
            self._until.popitem(last=False)

    async def tainted(self, company_id: str, session_id: str) -> bool:
        """Whether the session was marked (and has not expired)."""
        until = self._until.get(_digest(company_id, session_id))
        return until is not None and until > time.monotonic()


class MemoryBudgetMeters:
    """Budget counters in this process."""

    def __init__(self) -> None:
        self._counts: OrderedDict[str, tuple[float, dict[str, int]]] = OrderedDict()

    async def add(self, key: str, amounts: dict[str, int], expires_at: float) -> dict[str, int]:
        """See :class:`BudgetMeters`."""
        now = time.time()
        found = self._counts.get(key)
        counts = found[1] if found is not None and found[0] > now else {}
        for name, amount in amounts.items():
            counts[name] = counts.get(name, 0) + amount
        self._counts[key] = (expires_at, counts)
        self._counts.move_to_end(key)
        while len(self._counts) > _MAX_MEMORY_ENTRIES:
            self._counts.popitem(last=False)
        return dict(counts)

    async def read(self, keys: list[str]) -> list[dict[str, int]]:
        """See :class:`BudgetMeters`."""
        now = time.time()
        out: list[dict[str, int]] = []
        for key in keys:
            found = self._counts.get(key)
            out.append(dict(found[1]) if found is not None and found[0] > now else {})
        return out


class RedisSessionTaint:
    """Tainted sessions shared by every replica."""

    def __init__(self, client: aioredis.Redis, *, prefix: str, ttl_s: int = TAINT_TTL_S) -> None:
        self._client = client
        self._prefix = prefix
        self.ttl_s = ttl_s

    def _key(self, company_id: str, session_id: str) -> str:
        return f"{self._prefix}taint:{_digest(company_id, session_id)}"

    async def taint(self, company_id: str, session_id: str) -> None:
        """Mark the session (its expiry moves on)."""
        await self._client.set(self._key(company_id, session_id), b"1", ex=self.ttl_s)

    async def tainted(self, company_id: str, session_id: str) -> bool:
        """Whether the session was marked."""
        return bool(await self._client.exists(self._key(company_id, session_id)))


class RedisBudgetMeters:
    """Budget counters shared by every replica (one hash per key; ``HINCRBY`` is atomic)."""

    def __init__(self, client: aioredis.Redis, *, prefix: str) -> None:
        self._client = client
        self._prefix = prefix

    async def add(self, key: str, amounts: dict[str, int], expires_at: float) -> dict[str, int]:
        """See :class:`BudgetMeters`."""
        name = f"{self._prefix}budget:{key}"
        pipe = self._client.pipeline(transaction=True)
        for field, amount in amounts.items():
            pipe.hincrby(name, field, amount)
        pipe.expireat(name, int(expires_at) + 1)
        pipe.hgetall(name)
        *_, raw = await pipe.execute()
        return {k.decode() if isinstance(k, bytes) else str(k): int(v) for k, v in dict(raw).items()}

    async def read(self, keys: list[str]) -> list[dict[str, int]]:
        """See :class:`BudgetMeters`."""
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(f"{self._prefix}budget:{key}")
        rows = await pipe.execute()
        return [{k.decode() if isinstance(k, bytes) else str(k): int(v) for k, v in dict(r).items()} for r in rows]


__all__ = [
    "BudgetMeters",
    "MemoryBudgetMeters",
    "MemorySessionTaint",
    "RedisBudgetMeters",
    "RedisSessionTaint",
    "SessionTaint",
]
