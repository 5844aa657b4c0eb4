"""Redis backends: the state every replica shares (limits, cached results, idempotency keys, revocations).

All keys live under one configurable prefix (``forecourt:`` by default): ``<prefix>rate:<key>``,
``<prefix>cache:<key>``, ``<prefix>idem:<key>`` and ``<prefix>revoked:<key prefix>``.

When Redis is unavailable (connection refused, a timeout, a failover replica that is read-only), no
caller crashes and no request hangs: the client uses short socket timeouts and a single quick retry
(:func:`forecourt.redis_client.connect_redis`), and each backend degrades in the way that is safe for what it guards:

- **Rate limiter** — ``fail_mode="open"`` (default) allows the call, with a decision that says
  ``remaining=limit``: an outage of a shared counter should not become an outage of the service.
  ``fail_mode="closed"`` raises :class:`~forecourt.errors.Overloaded` (503, retryable, with a
  ``retry_after`` detail) instead, for operators who would rather shed load than serve it unmetered.
  It is not a 429: the caller did nothing wrong.
- **Result cache** — bypassed: ``get`` answers ``None`` (a miss) and ``set`` does nothing, so the
  call is served fresh from the adapter.
- **Idempotency store** — ``reserve`` fails closed with ``Overloaded``: without the shared record we
  cannot know that no other replica ran the side effect, and running it twice is worse than asking
  the client to retry. ``complete`` and ``release`` only log: the side effect already happened (or
  failed), the caller's result is what matters, and the pending claim expires with its TTL.
- **Revocation list** — ``revoke`` records the prefix in this process first, then raises
  ``Overloaded`` if it could not be shared, so the admin retries (revoking twice is harmless).
  ``is_revoked`` falls back to what this process knows: the store's key table stays the source of
  truth, and this list only speeds up propagation to other replicas.

Each backend logs one warning per interval while Redis is down (never the URL or a credential) and
one line when it is back. Recovery needs nothing: redis-py drops a failed connection and dials again
on the next call, a flushed script cache is reloaded on ``NOSCRIPT``, and no backend caches a
negative answer it got while Redis was down.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from forecourt.errors import Overloaded
from forecourt.gateway.backends.common import (
    Clock,
    WarnThrottle,
    decode_entry,
    emission_interval_us,
    encode_entry,
    rate_decision,
    to_us,
    ttl_ms,
)
from forecourt.gateway.base import IdempotencyEntry, RateDecision
from forecourt.redis_client import connect_redis  # the backends' clients; named here for their users too
from forecourt.settings import FailMode

__all__ = [
    "FAIL_CLOSED_RETRY_AFTER_S",
    "UNAVAILABLE",
    "RedisIdempotencyStore",
    "RedisRateLimiter",
    "RedisResultCache",
    "RedisRevocationList",
    "connect_redis",
]

logger = logging.getLogger(__name__)

UNAVAILABLE: tuple[type[BaseException], ...] = (RedisError, OSError)
"""What "Redis is unavailable" looks like: redis-py's errors (connection, timeout, read-only) and raw socket errors."""

FAIL_CLOSED_RETRY_AFTER_S = 1.0

# GCRA steps for one call, in one round trip, all or nothing; keep in step with
# forecourt.gateway.backends.common.gcra. ARGV[1] is the clock (< 0: the server's own, so every replica counts
# against one clock), then limit and interval per key. Keys are checked first and written only when every one
# allows the call. Integers are formatted with %d because Lua's default number-to-string keeps only 14
# significant digits and a microsecond timestamp has 16.
_GCRA_MANY_LUA = """
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local out = {}
local writes = {}
local denied = false
for i = 1, #KEYS do
  local limit = tonumber(ARGV[2 * i])
  local interval = tonumber(ARGV[2 * i + 1])
  local tat = tonumber(redis.call('GET', KEYS[i]))
  if tat == nil or tat < now then tat = now end
  local tolerance = interval * limit
  local new_tat = tat + interval
  local allow_at = new_tat - tolerance
  if now < allow_at then
    denied = true
    out[i] = {0, 0, tat - now, allow_at - now}
  else
    writes[i] = new_tat
    out[i] = {1, math.floor((now + tolerance - new_tat) / interval), new_tat - now, 0}
  end
end
if not denied then
  for i = 1, #KEYS do
    redis.call('SET', KEYS[i], string.format('%d', writes[i]), 'PX', math.ceil((writes[i] - now) / 1000))
  end
end
return out
"""

_RESERVE_LUA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return false
end
return redis.call('GET', KEYS[1])
"""

_RELEASE_LUA = """
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == 'P' then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class RedisRateLimiter:
    """GCRA limiter in one Lua script, atomic across replicas; one small key per limited identity.

    Args:
        client: A client from :func:`connect_redis`.
        prefix: Key prefix shared by every replica of one deployment.
        fail_mode: What to do when Redis is unavailable (see the module docstring).
        clock: ``None`` (production) uses Redis's own ``TIME``, so replicas need not agree on time;
            tests pass a fake clock to make decisions deterministic.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str = "forecourt:",
        fail_mode: FailMode = "open",
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._prefix = f"{prefix}rate:"
        self._fail_mode = fail_mode
        self._clock = clock
        self._many = client.register_script(_GCRA_MANY_LUA)
        self._warn = WarnThrottle(logger, "rate limiter")

    async def hit(self, key: str, limit: int, window_s: float) -> RateDecision:
        """Count one call against ``key``; denied calls are not counted."""
        return (await self.hit_many([(key, limit, window_s)]))[0]

    async def hit_many(self, hits: Sequence[tuple[str, int, float]]) -> list[RateDecision]:
        """Count one call against every key in one round trip, or against none when one of them refuses it."""
        if not hits:
            return []
        now = -1 if self._clock is None else to_us(self._clock())
        args: list[int] = [now]
        for _, limit, window_s in hits:
            args += [limit, emission_interval_us(limit, window_s)]
        try:
            raw = await self._many(keys=[self._prefix + key for key, _, _ in hits], args=args)
        except UNAVAILABLE as exc:
            return [self._degraded(exc, limit, window_s) for _, limit, window_s in hits]
        self._warn.succeeded()
        decisions = []
        for (_, limit, _), row in zip(hits, raw, strict=True):
            allowed, remaining, reset_us, retry_us = (int(v) for v in row)
            decisions.append(rate_decision(limit, bool(allowed), remaining, reset_us, retry_us))
        return decisions

    def _degraded(self, exc: BaseException, limit: int, window_s: float) -> RateDecision:
        if self._fail_mode == "closed":
            self._warn.failed(exc, "failing closed (503)")
            raise Overloaded(details={"retry_after": FAIL_CLOSED_RETRY_AFTER_S}) from exc
        self._warn.failed(exc, "failing open (calls are not limited)")
        return rate_decision(limit, True, limit, to_us(window_s), 0)


class RedisResultCache:
    """Cached results as plain keys with ``SET PX``; Redis's own eviction policy bounds memory.

    Args:
        client: A client from :func:`connect_redis`.
        prefix: Key prefix shared by every replica of one deployment.
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str = "forecourt:") -> None:
        self._client = client
        self._prefix = f"{prefix}cache:"
        self._warn = WarnThrottle(logger, "result cache")

    async def get(self, key: str) -> bytes | None:
        """The cached value, or ``None`` when absent, expired or Redis is unavailable."""
        try:
            value = await self._client.get(self._prefix + key)
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "bypassing the cache")
            return None
        self._warn.succeeded()
        if value is None:
            return None
        return value if isinstance(value, bytes) else str(value).encode()

    async def set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Store ``value`` for ``ttl_s`` seconds (a TTL of zero or less removes the key); no-op if Redis is down."""
        try:
            if ttl_s <= 0:
                await self._client.delete(self._prefix + key)
            else:
                await self._client.set(self._prefix + key, value, px=ttl_ms(ttl_s))
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "bypassing the cache")
            return
        self._warn.succeeded()


class RedisIdempotencyStore:
    """Idempotency records as one string key each; the claim is an atomic ``SET NX PX`` in a script.

    Args:
        client: A client from :func:`connect_redis`.
        prefix: Key prefix shared by every replica of one deployment.
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str = "forecourt:") -> None:
        self._client = client
        self._prefix = f"{prefix}idem:"
        self._reserve = client.register_script(_RESERVE_LUA)
        self._release = client.register_script(_RELEASE_LUA)
        self._warn = WarnThrottle(logger, "idempotency store")

    async def reserve(self, key: str, request_digest: str, ttl_s: float) -> IdempotencyEntry | None:
        """Claim ``key``; returns the existing entry if it is already claimed.

        Raises:
            Overloaded: Redis is unavailable, so the claim cannot be made safely.
        """
        pending = encode_entry(request_digest, None)
        try:
            existing = await self._reserve(keys=[self._prefix + key], args=[pending, ttl_ms(ttl_s)])
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "refusing side-effect calls that carry an idempotency key (503)")
            raise Overloaded(details={"retry_after": FAIL_CLOSED_RETRY_AFTER_S}) from exc
        self._warn.succeeded()
        return decode_entry(bytes(existing)) if existing else None

    async def complete(self, key: str, request_digest: str, response: bytes, ttl_s: float) -> None:
        """Store the response for ``key``; logs (and keeps the pending claim) if Redis is unavailable."""
        try:
            await self._client.set(self._prefix + key, encode_entry(request_digest, response), px=ttl_ms(ttl_s))
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "a completed response was not stored; its claim stays pending until it expires")
            return
        self._warn.succeeded()

    async def release(self, key: str) -> None:
        """Drop a pending claim (a completed entry is kept); logs if Redis is unavailable."""
        try:
            await self._release(keys=[self._prefix + key], args=[])
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "a failed call's claim was not released; it stays pending until it expires")
            return
        self._warn.succeeded()


class RedisRevocationList:
    """Revoked API-key prefixes as keys with a long TTL, plus what this process revoked or saw revoked.

    Args:
        client: A client from :func:`connect_redis`.
        prefix: Key prefix shared by every replica of one deployment.
        ttl_s: How long a revocation is shared (the store keeps it for ever).
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str = "forecourt:", ttl_s: float = 400 * 86_400) -> None:
        self._client = client
        self._prefix = f"{prefix}revoked:"
        self._ttl_ms = ttl_ms(ttl_s)
        self._known: set[str] = set()
        self._warn = WarnThrottle(logger, "revocation list")

    async def revoke(self, prefix: str) -> None:
        """Mark ``prefix`` revoked here and on every replica.

        Raises:
            Overloaded: Redis is unavailable; the revocation holds in this process only, retry to share it.
        """
        self._known.add(prefix)
        try:
            await self._client.set(self._prefix + prefix, b"1", px=self._ttl_ms)
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "a revocation was recorded in this process only")
            raise Overloaded(details={"retry_after": FAIL_CLOSED_RETRY_AFTER_S}) from exc
        self._warn.succeeded()

    async def is_revoked(self, prefix: str) -> bool:
        """Whether ``prefix`` was revoked by any replica (only this one's knowledge while Redis is down)."""
        if prefix in self._known:
            return True
        try:
            found = await self._client.exists(self._prefix + prefix)
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "answering from this process's own revocations")
            return False
        self._warn.succeeded()
        if found:
            # Only positive answers are remembered: a revocation is never undone.
            self._known.add(prefix)
        return bool(found)
