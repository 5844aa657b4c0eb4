"""When Redis is down no caller crashes or hangs, each backend degrades as documented, and all recover.

A closed loopback port stands for a dead Redis; a relay that the test switches off and on stands for an outage
of a real one. No mocks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
import redis.asyncio as aioredis

from forecourt.errors import Overloaded
from forecourt.gateway.backends import build_backends
from forecourt.gateway.backends.events import RedisEventBus
from forecourt.gateway.backends.redis import (
    RedisIdempotencyStore,
    RedisRateLimiter,
    RedisResultCache,
    RedisRevocationList,
    connect_redis,
)
from forecourt.settings import Settings

from .support import TcpRelay, eventually

DEAD_URL = "redis://forecourt:s3cret-password@127.0.0.1:1/0"
BOUND_S = 2.0
DAY = 86_400.0


@pytest.fixture
async def dead() -> AsyncIterator[aioredis.Redis]:
    client = connect_redis(DEAD_URL)
    try:
        yield client
    finally:
        await client.aclose()


class Stopwatch:
    def __enter__(self) -> Stopwatch:
        self.start = asyncio.get_running_loop().time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = asyncio.get_running_loop().time() - self.start


async def test_a_dead_redis_fails_the_rate_limiter_open_by_default(dead: aioredis.Redis) -> None:
    limiter = RedisRateLimiter(dead)
    with Stopwatch() as watch:
        decision = await limiter.hit("member-a", 5, 60.0)
    assert decision.allowed
    assert decision.remaining == 5
    assert watch.elapsed < BOUND_S


async def test_a_dead_redis_fails_a_closed_rate_limiter_with_overloaded(dead: aioredis.Redis) -> None:
    limiter = RedisRateLimiter(dead, fail_mode="closed")
    with pytest.raises(Overloaded) as raised:
        await limiter.hit("member-a", 5, 60.0)
    assert raised.value.code == "overloaded"
    assert raised.value.retryable
    assert raised.value.details["retry_after"] > 0


async def test_a_dead_redis_turns_the_cache_into_a_bypass(dead: aioredis.Redis) -> None:
    cache = RedisResultCache(dead)
    with Stopwatch() as watch:
        await cache.set("k", b"v", 60.0)
        assert await cache.get("k") is None
    assert watch.elapsed < BOUND_S


async def test_a_dead_redis_refuses_idempotent_reservations_so_no_side_effect_runs_twice(dead: aioredis.Redis) -> None:
    store = RedisIdempotencyStore(dead)
    with pytest.raises(Overloaded):
        await store.reserve("k1", "d", DAY)


async def test_a_dead_redis_does_not_fail_completing_or_releasing_a_claim(dead: aioredis.Redis) -> None:
    store = RedisIdempotencyStore(dead)
    await store.complete("k1", "d", b"response", DAY)
    await store.release("k1")


async def test_a_revocation_made_while_redis_is_dead_is_refused_but_holds_in_this_process(
    dead: aioredis.Redis,
) -> None:
    revocations = RedisRevocationList(dead)
    with pytest.raises(Overloaded):
        await revocations.revoke("fc_live_abc")
    assert await revocations.is_revoked("fc_live_abc")
    assert not await revocations.is_revoked("fc_live_other")


async def test_a_dead_redis_drops_published_events_and_refuses_new_subscriptions(dead: aioredis.Redis) -> None:
    bus = RedisEventBus(dead)
    try:
        with Stopwatch() as watch:
            await bus.publish("ch", b"lost")
            with pytest.raises(Overloaded):
                await bus.subscribe("ch").start()
        assert watch.elapsed < BOUND_S
    finally:
        await bus.close()


async def test_an_outage_is_logged_once_per_interval_without_credentials(
    dead: aioredis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    limiter = RedisRateLimiter(dead)
    with caplog.at_level(logging.WARNING, logger="forecourt.gateway.backends.redis"):
        for _ in range(5):
            await limiter.hit("member-a", 5, 60.0)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "rate limiter" in warnings[0].getMessage()
    assert "s3cret-password" not in caplog.text
    assert "forecourt" not in warnings[0].getMessage()  # nor the user name in the URL


async def test_backends_for_a_dead_redis_build_without_connecting_and_close_cleanly() -> None:
    backends = build_backends(Settings(redis_url=DEAD_URL, rate_limit_fail_mode="closed"))
    assert backends.kind == "redis"
    with pytest.raises(Overloaded):
        await backends.rate_limiter.hit("member-a", 1, 60.0)
    assert await backends.cache.get("k") is None
    await backends.close()
    await backends.close()


@pytest.fixture
async def relay(redis_url: str) -> AsyncIterator[TcpRelay]:
    target = urlsplit(redis_url)
    relay = TcpRelay(target.hostname or "127.0.0.1", target.port or 6379)
    await relay.start()
    try:
        yield relay
    finally:
        if relay._server is not None:
            await relay.stop()


async def test_the_backends_recover_when_redis_comes_back(relay: TcpRelay, redis_url: str, redis_prefix: str) -> None:
    client = connect_redis(relay.url_for(redis_url))
    limiter = RedisRateLimiter(client, prefix=redis_prefix, fail_mode="closed")
    cache = RedisResultCache(client, prefix=redis_prefix)
    store = RedisIdempotencyStore(client, prefix=redis_prefix)
    try:
        assert (await limiter.hit("member-a", 2, 60.0)).remaining == 1
        await cache.set("k", b"kept", 60.0)

        await relay.stop()
        with pytest.raises(Overloaded):
            await limiter.hit("member-a", 2, 60.0)
        assert await cache.get("k") is None
        with pytest.raises(Overloaded):
            await store.reserve("k1", "d", DAY)

        await relay.start()
        assert (await limiter.hit("member-a", 2, 60.0)).remaining == 0
        assert await cache.get("k") == b"kept"
        assert await store.reserve("k1", "d", DAY) is None
    finally:
        await client.aclose()


async def test_the_scripts_are_reloaded_after_redis_forgets_them(redis_url: str, redis_prefix: str) -> None:
    client = connect_redis(redis_url)
    limiter = RedisRateLimiter(client, prefix=redis_prefix)
    try:
        assert (await limiter.hit("member-a", 2, 60.0)).allowed
        await client.script_flush()
        assert (await limiter.hit("member-a", 2, 60.0)).remaining == 0
    finally:
        await client.aclose()


async def test_subscriptions_resume_after_an_outage(relay: TcpRelay, redis_url: str, redis_prefix: str) -> None:
    subscriber_client = connect_redis(relay.url_for(redis_url))
    publisher_client = connect_redis(redis_url)
    bus = RedisEventBus(subscriber_client, prefix=redis_prefix)
    publisher = RedisEventBus(publisher_client, prefix=redis_prefix)
    try:
        async with bus.subscribe("ch") as sub:
            await publisher.publish("ch", b"before")
            assert await asyncio.wait_for(anext(sub), 3.0) == b"before"
            await relay.stop()
            await relay.start()

            async def delivered_again() -> bool:
                await publisher.publish("ch", b"after")
                try:
                    return await asyncio.wait_for(anext(sub), 0.1) == b"after"
                except TimeoutError:
                    return False

            assert await eventually(delivered_again, timeout_s=5.0)
    finally:
        await bus.close()
        await publisher.close()
        await subscriber_client.aclose()
        await publisher_client.aclose()


async def test_a_silently_dead_connection_is_noticed_and_subscriptions_resume(
    relay: TcpRelay, redis_url: str, redis_prefix: str
) -> None:
    subscriber_client = connect_redis(relay.url_for(redis_url))
    publisher_client = connect_redis(redis_url)
    bus = RedisEventBus(subscriber_client, prefix=redis_prefix, ping_interval_s=0.1, ping_timeout_s=0.2)
    publisher = RedisEventBus(publisher_client, prefix=redis_prefix)
    try:
        async with bus.subscribe("ch") as sub:
            relay.silence_open_connections()

            async def delivered() -> bool:
                await publisher.publish("ch", b"after")
                try:
                    return await asyncio.wait_for(anext(sub), 0.1) == b"after"
                except TimeoutError:
                    return False

            assert await eventually(delivered, timeout_s=5.0)
    finally:
        await bus.close()
        await publisher.close()
        await subscriber_client.aclose()
        await publisher_client.aclose()


async def test_a_dead_redis_fails_several_limits_the_configured_way(dead: aioredis.Redis) -> None:
    hits = [("company-a", 5, 60.0), ("member-a", 2, 60.0)]
    assert all(d.allowed for d in await RedisRateLimiter(dead, fail_mode="open").hit_many(hits))
    with pytest.raises(Overloaded):
        await RedisRateLimiter(dead, fail_mode="closed").hit_many(hits)
