"""SessionRegistry contract (the console's server-side session records); memory and Redis."""

from __future__ import annotations

from forecourt.gateway.backends.console_sessions import MemorySessionRegistry

from .support import Rig, console_sessions, eventually


async def test_a_session_is_live_only_after_it_was_started(rig: Rig) -> None:
    registry = console_sessions(rig)
    assert not await registry.renew("never-started", 60)
    await registry.start("sid-1", 60)
    assert await registry.renew("sid-1", 60)


async def test_ending_a_session_ends_it_for_every_replica_at_once(rig: Rig) -> None:
    one, other = console_sessions(rig), console_sessions(rig)
    if rig.kind == "memory":
        other = one  # one process: one registry
    await one.start("sid-2", 60)
    assert await other.renew("sid-2", 60)
    await other.end("sid-2")
    assert not await one.renew("sid-2", 60)
    await other.end("sid-2")  # idempotent


async def test_a_session_not_renewed_within_its_idle_time_expires(rig: Rig) -> None:
    registry = console_sessions(rig)
    await registry.start("sid-3", 0.2)
    if rig.kind == "memory":
        rig.clock.advance(0.3)
        assert not await registry.renew("sid-3", 60)
        return

    client = rig.client()

    async def expired() -> bool:  # looked at without renewing it
        return not [k async for k in client.scan_iter(match=f"{rig.prefix}console-session:*")]

    assert await eventually(expired)
    assert not await registry.renew("sid-3", 60)


async def test_the_registry_keeps_only_digests_of_session_ids(redis_rig: Rig) -> None:
    registry = console_sessions(redis_rig)
    await registry.start("the-secret-session-id", 60)
    keys = [k async for k in redis_rig.client().scan_iter(match=f"{redis_rig.prefix}*")]
    assert keys
    assert all(b"the-secret-session-id" not in k for k in keys)


async def test_one_process_keeps_a_bounded_number_of_sessions(rig: Rig) -> None:
    registry = MemorySessionRegistry(max_sessions=3, clock=rig.clock)
    for n in range(10):
        await registry.start(f"sid-{n}", 60)
    assert len(registry) == 3
    assert await registry.renew("sid-9", 60)
    assert not await registry.renew("sid-0", 60)
