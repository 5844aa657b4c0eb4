"""RateLimiter contract: a GCRA burst of ``limit`` calls per ``window_s``, refilled evenly; memory and Redis."""

from __future__ import annotations

import asyncio

import pytest

from .support import Rig, eventually


async def test_calls_within_the_limit_are_allowed_and_count_down_remaining(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    decisions = [await limiter.hit("member-a", 3, 60.0) for _ in range(3)]
    assert [d.allowed for d in decisions] == [True, True, True]
    assert [d.remaining for d in decisions] == [2, 1, 0]
    assert all(d.limit == 3 for d in decisions)
    assert all(d.retry_after_s == 0 for d in decisions)


async def test_the_call_over_the_limit_is_denied_with_a_retry_after(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    for _ in range(3):
        await limiter.hit("member-a", 3, 60.0)
    denied = await limiter.hit("member-a", 3, 60.0)
    assert not denied.allowed
    assert denied.remaining == 0
    assert denied.retry_after_s == pytest.approx(20.0)
    assert denied.reset_after_s == pytest.approx(60.0)


async def test_reset_after_is_the_time_until_the_full_limit_is_available_again(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    first = await limiter.hit("member-a", 4, 8.0)
    second = await limiter.hit("member-a", 4, 8.0)
    assert first.reset_after_s == pytest.approx(2.0)
    assert second.reset_after_s == pytest.approx(4.0)


async def test_denied_calls_do_not_consume_capacity(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    for _ in range(2):
        await limiter.hit("member-a", 2, 10.0)
    for _ in range(5):
        assert not (await limiter.hit("member-a", 2, 10.0)).allowed
    rig.clock.advance(5.0)
    assert (await limiter.hit("member-a", 2, 10.0)).allowed


async def test_capacity_refills_evenly_over_the_window(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    for _ in range(3):
        await limiter.hit("member-a", 3, 3.0)
    rig.clock.advance(0.999)
    assert not (await limiter.hit("member-a", 3, 3.0)).allowed
    rig.clock.advance(0.001)
    assert (await limiter.hit("member-a", 3, 3.0)).allowed
    assert not (await limiter.hit("member-a", 3, 3.0)).allowed


async def test_a_steady_caller_gets_the_burst_then_one_call_per_refill_interval(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    allowed = 0
    for _ in range(600):  # one call every 0.1 s for 60 s against 10 per 10 s
        allowed += (await limiter.hit("member-a", 10, 10.0)).allowed
        rig.clock.advance(0.1)
    assert allowed == 10 + 59  # the burst of 10 in the first second, then one per second after it


async def test_after_a_full_window_the_whole_limit_is_available_again(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    for _ in range(5):
        await limiter.hit("member-a", 5, 1.0)
    rig.clock.advance(1.0)
    decision = await limiter.hit("member-a", 5, 1.0)
    assert decision.allowed
    assert decision.remaining == 4


async def test_keys_are_counted_independently(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    assert (await limiter.hit("member-a", 1, 60.0)).allowed
    assert not (await limiter.hit("member-a", 1, 60.0)).allowed
    assert (await limiter.hit("member-b", 1, 60.0)).allowed


async def test_concurrent_calls_never_exceed_the_limit(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    decisions = await asyncio.gather(*(limiter.hit("member-a", 7, 60.0) for _ in range(25)))
    assert sum(d.allowed for d in decisions) == 7
    assert sorted(d.remaining for d in decisions if d.allowed) == list(range(7))


async def test_a_limit_below_one_or_an_empty_window_is_a_programming_error(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    with pytest.raises(ValueError, match="limit"):
        await limiter.hit("member-a", 0, 60.0)
    with pytest.raises(ValueError, match="window"):
        await limiter.hit("member-a", 1, 0.0)


async def test_the_redis_limiter_counts_on_the_servers_clock_by_default(redis_rig: Rig) -> None:
    from forecourt.gateway.backends.redis import RedisRateLimiter

    limiter = RedisRateLimiter(redis_rig.client(), prefix=redis_rig.prefix)
    assert (await limiter.hit("member-a", 2, 0.2)).allowed
    assert (await limiter.hit("member-a", 2, 0.2)).allowed
    denied = await limiter.hit("member-a", 2, 0.2)
    assert not denied.allowed
    assert 0 < denied.retry_after_s <= 0.1

    async def allowed_again() -> bool:
        return (await limiter.hit("member-a", 2, 0.2)).allowed

    assert await eventually(allowed_again, timeout_s=2.0)


async def test_several_limits_are_counted_together_with_one_decision_each(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    hits = [("company-a", 5, 60.0), ("member-a", 2, 60.0), ("member-a:search", 3, 60.0)]
    first = await limiter.hit_many(hits)
    second = await limiter.hit_many(hits)
    assert [d.allowed for d in first] == [True, True, True]
    assert [d.remaining for d in first] == [4, 1, 2]
    assert [d.remaining for d in second] == [3, 0, 1]
    assert [d.limit for d in second] == [5, 2, 3]


async def test_a_call_refused_by_one_limit_uses_up_none_of_the_others(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    hits = [("company-a", 10, 60.0), ("member-a", 1, 60.0)]
    assert all(d.allowed for d in await limiter.hit_many(hits))
    refused = await limiter.hit_many(hits)
    assert [d.allowed for d in refused] == [True, False]
    assert refused[1].retry_after_s == pytest.approx(60.0)
    assert (await limiter.hit("company-a", 10, 60.0)).remaining == 8  # only the first call was counted


async def test_hits_counted_together_and_alone_share_the_same_buckets(rig: Rig) -> None:
    limiter = rig.rate_limiter()
    await limiter.hit("member-a", 3, 60.0)
    together = await limiter.hit_many([("member-a", 3, 60.0), ("member-b", 3, 60.0)])
    assert [d.remaining for d in together] == [1, 2]
    assert await limiter.hit_many([]) == []
