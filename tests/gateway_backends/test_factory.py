"""build_backends picks memory or Redis from settings."""

from __future__ import annotations

import asyncio

from forecourt.gateway.backends import build_backends
from forecourt.settings import Settings


async def test_without_a_redis_url_the_backends_are_in_memory() -> None:
    backends = build_backends(Settings(redis_url=None))
    try:
        assert backends.kind == "memory"
        assert (await backends.rate_limiter.hit("member-a", 1, 60.0)).allowed
        assert await backends.idempotency.reserve("k", "d", 60.0) is None
        await backends.cache.set("k", b"v", 60.0)
        assert await backends.cache.get("k") == b"v"
    finally:
        await backends.close()


async def test_with_a_redis_url_the_backends_share_state_in_redis(redis_url: str, redis_prefix: str) -> None:
    settings = Settings(redis_url=redis_url, redis_prefix=redis_prefix)
    one, two = build_backends(settings), build_backends(settings)
    try:
        assert one.kind == "redis"
        await one.revocations.revoke("fc_live_abc")
        assert await two.revocations.is_revoked("fc_live_abc")
        async with two.events.subscribe("ch") as sub:
            await one.events.publish("ch", b"hello")
            assert await asyncio.wait_for(anext(sub), 3.0) == b"hello"
    finally:
        await one.close()
        await two.close()


async def test_the_results_a_process_keeps_stay_within_its_cache_bytes(redis_url: str, redis_prefix: str) -> None:
    from forecourt.gateway.backends.memory import MemoryResultCache
    from forecourt.gateway.backends.tiered import TieredResultCache

    alone = build_backends(Settings(redis_url=None, cache_max_bytes=1_000))
    shared = build_backends(Settings(redis_url=redis_url, redis_prefix=redis_prefix, cache_max_bytes=1_000))
    try:
        assert isinstance(shared.cache, TieredResultCache)
        local = shared.cache.local
        assert isinstance(alone.cache, MemoryResultCache)
        assert isinstance(local, MemoryResultCache)
        for n in range(50):
            await alone.cache.set(f"k{n}", b"x" * 100, 60.0)
            await shared.cache.set(f"k{n}", b"x" * 100, 60.0)
        for process_cache in (alone.cache, local):
            assert (len(process_cache), process_cache.held_bytes) == (10, 1_000)
        assert await alone.cache.get("k49") == b"x" * 100
        assert await alone.cache.get("k0") is None
        assert await shared.cache.get("k0") == b"x" * 100  # the shared tier keeps what a replica let go
    finally:
        await alone.close()
        await shared.close()
