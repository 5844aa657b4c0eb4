"""AuthorityGenerations contract; memory and Redis (where every replica sees one replica's change)."""

from __future__ import annotations

import asyncio
import contextvars

from forecourt.gateway.backends.authority import (
    AuthorityGenerations,
    RedisAuthorityGenerations,
    read_once_per_call,
)

from .support import Rig, authority


async def test_a_companys_generation_moves_only_when_a_change_to_it_or_to_every_company_is_announced(
    rig: Rig,
) -> None:
    generations = authority(rig)
    first, other = await generations.current("acme"), await generations.current("globex")
    assert await generations.current("acme") == first
    await generations.moved(("acme",))
    moved = await generations.current("acme")
    assert moved != first
    assert await generations.current("globex") == other
    await generations.moved(("*",))
    assert await generations.current("acme") != moved
    assert await generations.current("globex") != other


async def test_a_change_announced_by_one_replica_is_read_by_another(redis_rig: Rig) -> None:
    one, two = authority(redis_rig), authority(redis_rig)
    before = await two.current("acme")
    await one.moved(("acme", "acme"))
    assert await two.current("acme") != before
    assert await one.current("acme") == await two.current("acme")


async def test_within_one_call_a_generation_is_read_once_and_a_change_is_seen_by_the_next_call(
    redis_rig: Rig,
) -> None:
    one, two = authority(redis_rig), authority(redis_rig)
    reads = _counting_mgets(two)
    with read_once_per_call():
        during = await two.current("acme")
        # another replica's change, committed while this call runs (outside this call's context)
        await asyncio.create_task(one.moved(("acme",)), context=contextvars.Context())
        assert await two.current("acme") == during
        assert await two.current("acme") == during
    assert reads == ["acme"]
    with read_once_per_call():  # the next call
        assert await two.current("acme") != during
    assert await two.current("acme") != during  # outside a call: read every time
    assert reads == ["acme", "acme", "acme"]


async def test_a_change_a_call_makes_itself_is_seen_by_its_own_later_reads(redis_rig: Rig) -> None:
    generations = authority(redis_rig)
    with read_once_per_call():
        before = await generations.current("acme")
        await generations.moved(("acme",))
        assert await generations.current("acme") != before


def _counting_mgets(generations: AuthorityGenerations) -> list[str]:
    """The companies whose generation ``generations`` reads from Redis from now on."""
    assert isinstance(generations, RedisAuthorityGenerations)
    client, reads = generations._client, []
    mget = client.mget

    async def counted(*keys: str) -> object:
        reads.append(str(keys[0]).rsplit(":", 1)[-1])
        return await mget(*keys)

    client.mget = counted  # type: ignore[method-assign]
    return reads
