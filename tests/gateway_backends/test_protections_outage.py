"""Session taint and budget meters while Redis is unreachable (a closed loopback port; no mocks).

Taint fails closed: a session no replica can check is never treated as clean. Budget meters fail as the rate
limiter does: open (unmetered) by default, a retryable 503 when the operator chose ``closed``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
import redis.asyncio as aioredis

from forecourt.errors import Overloaded
from forecourt.gateway.backends.protections import RedisBudgetMeters, RedisSessionTaint
from forecourt.redis_client import connect_redis

from .support import TcpRelay

DEAD_URL = "redis://127.0.0.1:1/0"
BOUND_S = 2.0
LATER = 4_102_444_800.0  # 2100-01-01


@pytest.fixture
async def dead() -> AsyncIterator[aioredis.Redis]:
    client = connect_redis(DEAD_URL)
    try:
        yield client
    finally:
        await client.aclose()


async def test_an_unreachable_redis_makes_a_session_check_fail_closed_with_a_retryable_503_quickly(
    dead: aioredis.Redis,
) -> None:
    taint = RedisSessionTaint(dead, prefix="t:")
    started = asyncio.get_running_loop().time()
    with pytest.raises(Overloaded) as raised:
        await taint.tainted("demo-motor-group", "session-1")
    assert asyncio.get_running_loop().time() - started < BOUND_S
    assert raised.value.http_status == 503
    assert raised.value.retryable
    assert raised.value.details["reason"] == "session_state_unavailable"
    assert raised.value.details["retry_after"] > 0


async def test_a_taint_that_cannot_be_shared_is_refused_but_this_process_keeps_it(dead: aioredis.Redis) -> None:
    taint = RedisSessionTaint(dead, prefix="t:")
    with pytest.raises(Overloaded):
        await taint.taint("demo-motor-group", "session-1")
    assert await taint.tainted("demo-motor-group", "session-1")
    with pytest.raises(Overloaded):
        await taint.tainted("demo-motor-group", "session-2")


async def test_unreachable_budget_meters_fail_open_by_default_and_count_nothing(dead: aioredis.Redis) -> None:
    meters = RedisBudgetMeters(dead, prefix="b:")
    assert await meters.add("2026-11:demo-motor-group/m/crm-agent", {"calls": 1}, LATER) == {}


async def test_unreachable_budget_meters_failing_closed_refuse_with_a_retryable_503(dead: aioredis.Redis) -> None:
    meters = RedisBudgetMeters(dead, prefix="b:", fail_mode="closed")
    with pytest.raises(Overloaded) as raised:
        await meters.add("2026-11:demo-motor-group/m/crm-agent", {"calls": 1}, LATER)
    assert raised.value.details["reason"] == "budgets_unavailable"


async def test_a_budget_report_is_never_a_page_of_zeros_while_redis_is_unreachable(dead: aioredis.Redis) -> None:
    meters = RedisBudgetMeters(dead, prefix="b:")
    with pytest.raises(Overloaded):
        await meters.read(["2026-11:demo-motor-group/m/crm-agent"])


@pytest.mark.redis
async def test_a_session_seen_tainted_before_an_outage_stays_tainted_during_it(
    redis_url: str, redis_prefix: str
) -> None:
    parts = urlsplit(redis_url)
    relay = TcpRelay(parts.hostname or "127.0.0.1", parts.port or 6379)
    await relay.start()
    client = connect_redis(relay.url_for(redis_url))
    try:
        writer = RedisSessionTaint(client, prefix=redis_prefix)
        await writer.taint("demo-motor-group", "session-1")
        reader = RedisSessionTaint(client, prefix=redis_prefix)
        assert await reader.tainted("demo-motor-group", "session-1")
        await relay.stop()
        assert await reader.tainted("demo-motor-group", "session-1")  # seen before: still restricted
        with pytest.raises(Overloaded):
            await reader.tainted("demo-motor-group", "session-2")  # never seen: cannot be called clean
    finally:
        await client.aclose()
        if relay._server is not None:
            await relay.stop()
