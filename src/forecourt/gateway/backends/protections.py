"""Shared state of the gateway's protections: tainted sessions and budget meters (memory, and Redis for replicas).

- :class:`SessionTaint`: the sessions (an MCP session, an A2A context, an envelope ``caller.sessionId``) that have
  received output carrying third-party text; kept ``ttl_s`` after the last such output. Redis keys
  ``<prefix>taint:<sha256 of company and session>``.
- :class:`BudgetMeters`: counters per subject and period (``calls``, ``tokens_in``, ``tokens_out``,
  ``spend_minor``), added to atomically; a period's key expires after the period ends, which is the reset.
  Redis hashes ``<prefix>budget:<period>:<subject>``.

While Redis is unavailable (see :mod:`forecourt.gateway.backends.redis` for the pattern):

- **Session taint fails closed.** ``tainted`` raises :class:`~forecourt.errors.Overloaded` (503, retryable,
  ``details.reason: session_state_unavailable``) unless this process itself saw the session tainted (a positive
  answer is safe to keep, as a revocation is): without the shared record no replica can tell that a session has
  not read untrusted output, and letting a side-effect call through on a guess is the very thing the restriction
  exists to stop. ``taint`` records the session in this process, then raises ``Overloaded`` so the caller can
  withhold the untrusted output it could not record (gateway/protections.py decides).
- **Budget meters fail as the rate limiter does** (``FORECOURT_RATE_LIMIT_FAIL_MODE``): ``open`` (default) counts
  nothing and answers empty meters, so calls are served unmetered; ``closed`` raises ``Overloaded``. ``read``
  (the usage report) raises ``Overloaded`` in either mode: a report of zeros would be a wrong report.

Each logs one warning per interval while Redis is down (never the URL), and one line when it is back.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

from forecourt.errors import Overloaded
from forecourt.gateway.backends.common import WarnThrottle

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from forecourt.settings import FailMode

logger = logging.getLogger(__name__)
TAINT_TTL_S = 24 * 3600
_MAX_MEMORY_ENTRIES = 100_000
RETRY_AFTER_S = 1.0
SESSION_STATE_UNAVAILABLE = "session_state_unavailable"
BUDGETS_UNAVAILABLE = "budgets_unavailable"


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


def _unavailable(reason: str, exc: BaseException) -> Overloaded:
    error = Overloaded(details={"retry_after": RETRY_AFTER_S, "reason": reason})
    error.__cause__ = exc
    return error


class RedisSessionTaint:
    """Tainted sessions shared by every replica; fails closed while Redis is down (module docstring).

    Sessions this process tainted (or saw tainted) are also kept here, bounded: a taint is never undone before it
    expires, so a positive answer needs no round trip and survives an outage.
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str, ttl_s: int = TAINT_TTL_S) -> None:
        self._client = client
        self._prefix = prefix
        self.ttl_s = ttl_s
        self._known = MemorySessionTaint(ttl_s)
        self._warn = WarnThrottle(logger, "session taint")

    def _key(self, company_id: str, session_id: str) -> str:
        return f"{self._prefix}taint:{_digest(company_id, session_id)}"

    async def taint(self, company_id: str, session_id: str) -> None:
        """Mark the session (its expiry moves on).

        Raises:
            Overloaded: Redis is unavailable; the mark holds in this process only.
        """
        from forecourt.gateway.backends.redis import UNAVAILABLE

        await self._known.taint(company_id, session_id)
        try:
            await self._client.set(self._key(company_id, session_id), b"1", ex=self.ttl_s)
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "a tainted session was recorded in this process only")
            raise _unavailable(SESSION_STATE_UNAVAILABLE, exc) from exc
        self._warn.succeeded()

    async def tainted(self, company_id: str, session_id: str) -> bool:
        """Whether the session was marked.

        Raises:
            Overloaded: Redis is unavailable and this process has not seen the session tainted.
        """
        from forecourt.gateway.backends.redis import UNAVAILABLE

        if await self._known.tainted(company_id, session_id):
            return True
        try:
            found = bool(await self._client.exists(self._key(company_id, session_id)))
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "refusing restricted calls of sessions it cannot check (503)")
            raise _unavailable(SESSION_STATE_UNAVAILABLE, exc) from exc
        self._warn.succeeded()
        if found:
            await self._known.taint(company_id, session_id)
        return found


def _counts(raw: object) -> dict[str, int]:
    return {k.decode() if isinstance(k, bytes) else str(k): int(v) for k, v in dict(raw).items()}  # type: ignore[call-overload]


class RedisBudgetMeters:
    """Budget counters shared by every replica (one hash per key; ``HINCRBY`` is atomic).

    Args:
        client: A client from :func:`~forecourt.gateway.backends.redis.connect_redis`.
        prefix: Key prefix shared by every replica of one deployment.
        fail_mode: What ``add`` does while Redis is unavailable, as the rate limiter (module docstring).
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str, fail_mode: FailMode = "open") -> None:
        self._client = client
        self._prefix = prefix
        self.fail_mode = fail_mode
        self._warn = WarnThrottle(logger, "budget meters")

    async def add(self, key: str, amounts: dict[str, int], expires_at: float) -> dict[str, int]:
        """See :class:`BudgetMeters`; while Redis is down: ``{}`` (open) or :class:`Overloaded` (closed)."""
        from forecourt.gateway.backends.redis import UNAVAILABLE

        name = f"{self._prefix}budget:{key}"
        pipe = self._client.pipeline(transaction=True)
        for field, amount in amounts.items():
            pipe.hincrby(name, field, amount)
        pipe.expireat(name, int(expires_at) + 1)
        pipe.hgetall(name)
        try:
            *_, raw = await pipe.execute()
        except UNAVAILABLE as exc:
            if self.fail_mode == "closed":
                self._warn.failed(exc, "failing closed (503)")
                raise _unavailable(BUDGETS_UNAVAILABLE, exc) from exc
            self._warn.failed(exc, "failing open (calls are not metered)")
            return {}
        self._warn.succeeded()
        return _counts(raw)

    async def read(self, keys: list[str]) -> list[dict[str, int]]:
        """See :class:`BudgetMeters`.

        Raises:
            Overloaded: Redis is unavailable.
        """
        from forecourt.gateway.backends.redis import UNAVAILABLE

        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(f"{self._prefix}budget:{key}")
        try:
            rows = await pipe.execute()
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "the budget report is unavailable (503)")
            raise _unavailable(BUDGETS_UNAVAILABLE, exc) from exc
        self._warn.succeeded()
        return [_counts(r) for r in rows]


__all__ = [
    "BUDGETS_UNAVAILABLE",
    "SESSION_STATE_UNAVAILABLE",
    "BudgetMeters",
    "MemoryBudgetMeters",
    "MemorySessionTaint",
    "RedisBudgetMeters",
    "RedisSessionTaint",
    "SessionTaint",
]
