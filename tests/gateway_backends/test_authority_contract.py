"""AuthorityGenerations contract; memory and Redis (where every replica sees one replica's change)."""

from __future__ import annotations

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
