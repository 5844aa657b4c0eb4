"""Server-side records of console sessions: a session exists only while its record does.

The console's cookie is sealed, but a sealed cookie alone is a bearer token that lives as long as its key:
anyone who learns the key (or a cookie) can open the console until the idle clock runs out, and signing out
cannot end it. Each session therefore names a record kept here — by the SHA-256 of a 256-bit random id the
cookie carries, never the id itself — with the idle timeout as its time to live. A page load renews the
record; sign-out (and an operator credential that stops verifying) deletes it, on every replica at once when
the records live in Redis. A forged cookie names no record and opens nothing.

While Redis is unreachable no session can be checked: pages answer as signed out (fail closed).
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import TYPE_CHECKING, Protocol

from forecourt.errors import Overloaded
from forecourt.gateway.backends.common import Clock, WarnThrottle, ttl_ms

if TYPE_CHECKING:
    import redis.asyncio as aioredis

logger = logging.getLogger(__name__)
MAX_MEMORY_SESSIONS = 100_000
"""Sessions one process keeps at most; the oldest go first beyond it."""


def record_key(session_id: str) -> str:
    """What a record is stored under: the digest of the cookie's id (a store dump reveals no live id)."""
    return hashlib.sha256(session_id.encode()).hexdigest()


class SessionRegistry(Protocol):
    """Live console sessions by id."""

    async def start(self, session_id: str, ttl_s: float) -> None:
        """Record a new session that lives ``ttl_s`` unless renewed."""
        ...

    async def renew(self, session_id: str, ttl_s: float) -> bool:
        """Whether the session is live; if so it lives ``ttl_s`` from now."""
        ...

    async def end(self, session_id: str) -> None:
        """End the session at once (idempotent)."""
        ...


class MemorySessionRegistry:
    """Sessions of one process (one replica)."""

    def __init__(self, max_sessions: int = MAX_MEMORY_SESSIONS, clock: Clock = time.monotonic) -> None:
        self._expiry: dict[str, float] = {}
        self._max = max_sessions
        self._clock = clock

    async def start(self, session_id: str, ttl_s: float) -> None:
        """See :meth:`SessionRegistry.start`."""
        now = self._clock()
        if len(self._expiry) >= self._max:
            for key in [k for k, at in self._expiry.items() if at <= now]:
                del self._expiry[key]
        while len(self._expiry) >= self._max:
            del self._expiry[next(iter(self._expiry))]
        self._expiry[record_key(session_id)] = now + ttl_s

    async def renew(self, session_id: str, ttl_s: float) -> bool:
        """See :meth:`SessionRegistry.renew`."""
        key = record_key(session_id)
        at = self._expiry.get(key)
        now = self._clock()
        if at is None or at <= now:
            self._expiry.pop(key, None)
            return False
        self._expiry[key] = now + ttl_s
        return True

    async def end(self, session_id: str) -> None:
        """See :meth:`SessionRegistry.end`."""
        self._expiry.pop(record_key(session_id), None)

    def __len__(self) -> int:
        return len(self._expiry)


class RedisSessionRegistry:
    """Sessions shared by every replica: one key per session with the idle timeout as its TTL."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = "forecourt:") -> None:
        self._client = client
        self._prefix = f"{prefix}console-session:"
        self._warn = WarnThrottle(logger, "console sessions")

    async def start(self, session_id: str, ttl_s: float) -> None:
        """See :meth:`SessionRegistry.start` (raises ``Overloaded`` while Redis is unreachable)."""
        from forecourt.gateway.backends.redis import FAIL_CLOSED_RETRY_AFTER_S, UNAVAILABLE

        try:
            await self._client.set(self._prefix + record_key(session_id), b"1", px=ttl_ms(ttl_s))
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "no console session can start")
            raise Overloaded(details={"retry_after": FAIL_CLOSED_RETRY_AFTER_S}) from exc
        self._warn.succeeded()

    async def renew(self, session_id: str, ttl_s: float) -> bool:
        """See :meth:`SessionRegistry.renew` (``False`` while Redis is unreachable: fail closed)."""
        from forecourt.gateway.backends.redis import UNAVAILABLE

        try:
            renewed = await self._client.pexpire(self._prefix + record_key(session_id), ttl_ms(ttl_s))
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "console sessions answer as signed out")
            return False
        self._warn.succeeded()
        return bool(renewed)

    async def end(self, session_id: str) -> None:
        """See :meth:`SessionRegistry.end` (raises ``Overloaded`` while Redis is unreachable: sign out again)."""
        from forecourt.gateway.backends.redis import FAIL_CLOSED_RETRY_AFTER_S, UNAVAILABLE

        try:
            await self._client.delete(self._prefix + record_key(session_id))
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "a console sign-out could not reach Redis")
            raise Overloaded(details={"retry_after": FAIL_CLOSED_RETRY_AFTER_S}) from exc
        self._warn.succeeded()
