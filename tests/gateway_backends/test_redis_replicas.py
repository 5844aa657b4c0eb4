"""Two independent Redis backend instances (two replicas, each with its own client) share all state."""

from __future__ import annotations

import asyncio

from forecourt.gateway.backends.events import RedisEventBus
from forecourt.gateway.backends.redis import (
    RedisIdempotencyStore,
    RedisRateLimiter,
    RedisResultCache,
    RedisRevocationList,
)
from forecourt.gateway.base import IdempotencyEntry

from .support import Rig

DAY = 86_400.0


async def test_two_replicas_count_calls_against_one_shared_limit(redis_rig: Rig) -> None:
    one = RedisRateLimiter(redis_rig.client(), prefix=redis_rig.prefix)
    two = RedisRateLimiter(redis_rig.client(), prefix=redis_rig.prefix)
    decisions = await asyncio.gather(*(replica.hit("member-a", 10, 60.0) for replica in [one, two] * 10))
    assert sum(d.allowed for d in decisions) == 10
    assert not (await one.hit("member-a", 10, 60.0)).allowed
    assert not (await two.hit("member-a", 10, 60.0)).allowed


async def test_a_side_effect_claimed_on_one_replica_is_seen_on_the_other(redis_rig: Rig) -> None:
    one = RedisIdempotencyStore(redis_rig.client(), prefix=redis_rig.prefix)
    two = RedisIdempotencyStore(redis_rig.client(), prefix=redis_rig.prefix)
    assert await one.reserve("k1", "d", DAY) is None
    assert await two.reserve("k1", "d", DAY) == IdempotencyEntry("d", None)
    await one.complete("k1", "d", b"response", DAY)
    assert await two.reserve("k1", "d", DAY) == IdempotencyEntry("d", b"response")


async def test_a_key_revoked_on_one_replica_is_revoked_on_the_other(redis_rig: Rig) -> None:
    one = RedisRevocationList(redis_rig.client(), prefix=redis_rig.prefix)
    two = RedisRevocationList(redis_rig.client(), prefix=redis_rig.prefix)
    assert not await two.is_revoked("fc_live_abc")
    await one.revoke("fc_live_abc")
    assert await two.is_revoked("fc_live_abc")


async def test_a_result_cached_by_one_replica_is_served_by_the_other(redis_rig: Rig) -> None:
    one = RedisResultCache(redis_rig.client(), prefix=redis_rig.prefix)
    two = RedisResultCache(redis_rig.client(), prefix=redis_rig.prefix)
    await one.set("inventory.search:abc", b"result", 60.0)
    assert await two.get("inventory.search:abc") == b"result"


async def test_an_event_published_on_one_replica_reaches_subscribers_on_both(redis_rig: Rig) -> None:
    one = RedisEventBus(redis_rig.client(), prefix=redis_rig.prefix)
    two = RedisEventBus(redis_rig.client(), prefix=redis_rig.prefix)
    redis_rig.buses += [one, two]
    async with one.subscribe("inventory") as on_one, two.subscribe("inventory") as on_two:
        await two.publish("inventory", b"vehicle-updated")
        assert await asyncio.wait_for(anext(on_one), 3.0) == b"vehicle-updated"
        assert await asyncio.wait_for(anext(on_two), 3.0) == b"vehicle-updated"


async def test_deployments_with_different_prefixes_share_nothing(redis_rig: Rig) -> None:
    one = RedisRateLimiter(redis_rig.client(), prefix=redis_rig.prefix + "a:")
    two = RedisRateLimiter(redis_rig.client(), prefix=redis_rig.prefix + "b:")
    assert (await one.hit("member-a", 1, 60.0)).allowed
    assert (await two.hit("member-a", 1, 60.0)).allowed
