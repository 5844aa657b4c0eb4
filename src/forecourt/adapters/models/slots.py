"""Counted slots with leases: a per-company quota of concurrent GPU work, held across replicas.

A slot is held by a named holder (a call's trace id, a job id) until released or until its lease runs out, so a
replica that dies holding slots frees them within one lease. In memory for one replica; in Redis for many, where
one Lua script drops expired leases, counts and adds atomically (a sorted set per key scored by lease expiry in
Redis server time, so replicas' clocks do not matter).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from forecourt.adapters.errors import SlotsUnavailable
from forecourt.settings import Settings


class SlotPool(Protocol):
    """Leased slots per key."""

    async def acquire(self, key: str, holder: str, limit: int, lease_s: float) -> bool:
        """Take (or renew) ``holder``'s slot under ``key`` if fewer than ``limit`` are held; whether it did."""
        ...

    async def release(self, key: str, holder: str) -> None:
        """Give ``holder``'s slot back (nothing if it holds none)."""
        ...

    async def held(self, key: str) -> int:
        """How many unexpired slots ``key`` has."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class MemorySlotPool:
    """Slots of one process."""

    def __init__(self) -> None:
        self._slots: dict[str, dict[str, float]] = {}

    def _live(self, key: str) -> dict[str, float]:
        now = time.monotonic()
        slots = self._slots.setdefault(key, {})
        for holder in [h for h, expiry in slots.items() if expiry <= now]:
            del slots[holder]
        return slots

    async def acquire(self, key: str, holder: str, limit: int, lease_s: float) -> bool:
        """See :meth:`SlotPool.acquire`."""
        slots = self._live(key)
        if holder not in slots and len(slots) >= limit:
            return False
        slots[holder] = time.monotonic() + lease_s
        return True

    async def release(self, key: str, holder: str) -> None:
        """See :meth:`SlotPool.release`."""
        self._live(key).pop(holder, None)

    async def held(self, key: str) -> int:
        """See :meth:`SlotPool.held`."""
        return len(self._live(key))

    async def aclose(self) -> None:
        """Nothing to release."""


_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local limit = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false and redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], tonumber(top[2]))
return 1
"""
_HELD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])
"""


class RedisSlotPool:
    """Slots shared by every replica through Redis."""

    def __init__(self, client: Any, prefix: str = "", *, owns_client: bool = False) -> None:
        self._client = client
        self._prefix = prefix
        self._owns = owns_client
        self._acquire = client.register_script(_ACQUIRE)
        self._held = client.register_script(_HELD)

    def _key(self, key: str) -> str:
        return f"{self._prefix}slots:{key}"

    async def _run(self, script: Any, key: str, *args: Any) -> int:
        from redis.exceptions import RedisError

        try:
            return int(await script(keys=[self._key(key)], args=list(args)))
        except (RedisError, OSError) as exc:
            raise SlotsUnavailable() from exc

    async def acquire(self, key: str, holder: str, limit: int, lease_s: float) -> bool:
        """See :meth:`SlotPool.acquire`."""
        return await self._run(self._acquire, key, holder, limit, int(lease_s * 1000)) == 1

    async def release(self, key: str, holder: str) -> None:
        """See :meth:`SlotPool.release`."""
        from redis.exceptions import RedisError

        try:
            await self._client.zrem(self._key(key), holder)
        except (RedisError, OSError) as exc:
            raise SlotsUnavailable() from exc

    async def held(self, key: str) -> int:
        """See :meth:`SlotPool.held`."""
        return await self._run(self._held, key)

    async def aclose(self) -> None:
        """Close the client if this pool opened it."""
        if self._owns:
            await self._client.aclose()


def build_slot_pool(settings: Settings) -> SlotPool:
    """Redis slots when ``settings.redis_url`` is set (a client of their own), else memory."""
    if settings.redis_url:
        from forecourt.redis_client import connect_redis

        return RedisSlotPool(connect_redis(settings.redis_url), settings.redis_prefix, owns_client=True)
    return MemorySlotPool()
