"""The two-tier result cache: a replica's own memory in front of the cache the replicas share."""

from __future__ import annotations

import pytest

from forecourt.gateway.backends import build_backends
from forecourt.gateway.backends.memory import MemoryResultCache
from forecourt.gateway.backends.redis import RedisResultCache
from forecourt.gateway.backends.tiered import TieredResultCache
from forecourt.settings import Settings

from .support import FakeClock, Rig


class CountingCache(MemoryResultCache):
    """A shared tier that counts how often it is asked."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock)
        self.gets = 0

    async def get(self, key: str) -> bytes | None:
        self.gets += 1
        return await super().get(key)


def replica(shared: MemoryResultCache, clock: FakeClock, local_ttl_s: float = 2.0) -> TieredResultCache:
    return TieredResultCache(MemoryResultCache(clock=clock), shared, local_ttl_s=local_ttl_s)


async def test_a_hit_in_the_local_tier_does_not_ask_the_shared_cache() -> None:
    clock = FakeClock()
    shared = CountingCache(clock)
    cache = replica(shared, clock)
    await cache.set("k", b"v", 30.0)
    assert [await cache.get("k") for _ in range(5)] == [b"v"] * 5
    assert shared.gets == 0


async def test_an_entry_another_replica_wrote_is_fetched_once_then_served_locally() -> None:
    clock = FakeClock()
    shared = CountingCache(clock)
    writer, reader = replica(shared, clock), replica(shared, clock)
    await writer.set("k", b"v", 30.0)
    assert await reader.get("k") == b"v"
    assert await reader.get("k") == b"v"
    assert shared.gets == 1


async def test_a_rewritten_shared_entry_is_seen_once_the_local_copy_is_older_than_its_bound() -> None:
    clock = FakeClock()
    shared = CountingCache(clock)
    writer, reader = replica(shared, clock), replica(shared, clock)
    await writer.set("k", b"old", 30.0)
    assert await reader.get("k") == b"old"
    await writer.set("k", b"new", 30.0)
    clock.advance(1.9)
    assert await reader.get("k") == b"old"
    clock.advance(0.1)
    assert await reader.get("k") == b"new"


async def test_a_local_copy_never_outlives_the_entry_and_removal_reaches_both_tiers() -> None:
    clock = FakeClock()
    shared = CountingCache(clock)
    cache = replica(shared, clock, local_ttl_s=10.0)
    await cache.set("short", b"v", 0.5)
    clock.advance(0.5)
    assert await cache.get("short") is None
    await cache.set("k", b"v", 30.0)
    await cache.set("k", b"", 0)
    assert await cache.get("k") is None
    with pytest.raises(ValueError, match="local_ttl_s"):
        TieredResultCache(MemoryResultCache(), shared, local_ttl_s=0)


async def test_redis_backends_put_a_local_tier_in_front_of_redis_unless_turned_off(redis_rig: Rig) -> None:
    on = build_backends(Settings(redis_url=redis_rig.redis_url, redis_prefix=redis_rig.prefix))
    off = build_backends(Settings(redis_url=redis_rig.redis_url, redis_prefix=redis_rig.prefix, cache_local_ttl_s=0))
    try:
        assert isinstance(on.cache, TieredResultCache)
        assert isinstance(on.cache.shared, RedisResultCache)
        assert isinstance(off.cache, RedisResultCache)
        await on.cache.set("tiered:k", b"v", 30.0)
        assert await off.cache.get("tiered:k") == b"v"  # written through to the replicas' cache
    finally:
        await on.close()
        await off.close()
