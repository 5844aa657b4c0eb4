"""The outbox dispatcher: outbox rows become bus events for subscribers on every replica."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from forecourt.domain.events import ChangeEvent, ChangeType, ResourceType
from forecourt.events import OutboxDispatcher, decode_event, encode_event
from forecourt.gateway.backends.events import MemoryEventBus
from forecourt.gateway.backends.memory import MemoryIdempotencyStore
from forecourt.store import SqlStore, create_engine, upgrade_async
from forecourt.store.sql.tables import outbox

NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)


def _event(n: int, dealer: str = "d1") -> ChangeEvent:
    return ChangeEvent(
        id=f"evt_{n}",
        dealership_id=dealer,
        resource_type=ResourceType.LEAD,
        resource_id=f"lead_{n}",
        change_type=ChangeType.CREATED,
        status="new",
        occurred_at=NOW,
        payload={"email": "someone@example.com"},
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    url = f"sqlite+aiosqlite:///{tmp_path}/events.db"
    await upgrade_async(url)
    sql = SqlStore(create_engine(url))
    try:
        yield sql
    finally:
        await sql.close()


async def _append(store: SqlStore, *events: ChangeEvent) -> None:
    async with store.transaction() as uow:
        for event in events:
            await uow.outbox.append(event)


async def test_events_committed_after_start_reach_subscribers_of_their_dealership(store: SqlStore) -> None:
    await _append(store, _event(0))  # history: replayed by events.list, not pushed live
    bus = MemoryEventBus()
    dispatcher = OutboxDispatcher(store, bus)
    await dispatcher.start_position()
    async with dispatcher.subscribe("d1") as d1, dispatcher.subscribe("d2") as d2:
        await _append(store, _event(1), _event(2, "d2"), _event(3))
        assert await dispatcher.poll_once() == 3
        first = await asyncio.wait_for(anext(d1), 2)
        second = await asyncio.wait_for(anext(d1), 2)
        other = await asyncio.wait_for(anext(d2), 2)
    assert [first.id, second.id, other.id] == ["evt_1", "evt_3", "evt_2"]
    assert first.payload == {}  # the payload may carry PII: it never travels on the bus
    assert await dispatcher.poll_once() == 0


async def test_the_run_loop_publishes_without_being_polled_by_hand(store: SqlStore) -> None:
    bus = MemoryEventBus()
    dispatcher = OutboxDispatcher(store, bus, poll_interval_s=0.02)
    task = asyncio.create_task(dispatcher.run())
    try:
        await asyncio.wait_for(dispatcher.running.wait(), 5)
        async with dispatcher.subscribe("d1") as events:
            await _append(store, _event(7))
            dispatcher.wake()
            got = await asyncio.wait_for(anext(events), 5)
        assert got.resource_id == "lead_7"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_replicas_sharing_claims_publish_each_event_once(store: SqlStore) -> None:
    bus = MemoryEventBus()
    claims = MemoryIdempotencyStore()
    a = OutboxDispatcher(store, bus, claims=claims)
    b = OutboxDispatcher(store, bus, claims=claims)
    await a.start_position()
    await b.start_position()
    await _append(store, _event(1), _event(2))
    assert await a.poll_once() + await b.poll_once() == 2


async def _commit_late(store: SqlStore, seq: int, event: ChangeEvent) -> None:
    """``event`` committed with a ``seq`` below ones already visible, as concurrent writers can on PostgreSQL."""
    async with store.engine.begin() as conn:
        await conn.execute(
            sa.insert(outbox).values(
                seq=seq,
                id=event.id,
                dealership_id=event.dealership_id,
                resource_type=event.resource_type.value,
                resource_id=event.resource_id,
                change_type=event.change_type.value,
                status=event.status,
                occurred_at=event.occurred_at,
                payload=event.payload,
            )
        )


async def test_an_event_committed_late_inside_the_window_is_published_once(store: SqlStore) -> None:
    bus = MemoryEventBus()
    dispatcher = OutboxDispatcher(store, bus, overlap=16)
    await dispatcher.start_position()
    async with dispatcher.subscribe("d1") as events:
        await _append(store, _event(1))
        await _commit_late(store, 10, _event(10))
        assert await dispatcher.poll_once() == 2
        assert dispatcher.position == 10
        await _commit_late(store, 5, _event(5))  # behind the position, inside the window
        assert await dispatcher.poll_once() == 1
        assert await dispatcher.poll_once() == 0  # nothing is published twice
        got = [(await asyncio.wait_for(anext(events), 2)).id for _ in range(3)]
    assert got == ["evt_1", "evt_10", "evt_5"]


async def test_an_event_committed_later_than_the_window_is_left_to_the_replay_feed(store: SqlStore) -> None:
    dispatcher = OutboxDispatcher(store, MemoryEventBus(), overlap=4)
    await dispatcher.start_position()
    await _commit_late(store, 20, _event(20))
    assert await dispatcher.poll_once() == 1
    await _commit_late(store, 3, _event(3))  # 17 behind: outside the window
    await _commit_late(store, 18, _event(18))
    assert await dispatcher.poll_once() == 1
    assert dispatcher.position == 20


async def test_history_inside_the_window_at_start_is_not_pushed_live(store: SqlStore) -> None:
    await _append(store, _event(1), _event(2))
    dispatcher = OutboxDispatcher(store, MemoryEventBus(), overlap=16)
    await dispatcher.start_position()
    assert await dispatcher.poll_once() == 0
    await _append(store, _event(3))
    assert await dispatcher.poll_once() == 1


def test_malformed_bus_messages_are_ignored() -> None:
    assert decode_event(b"{not json") is None
    assert decode_event(encode_event(_event(5))) == _event(5).model_copy(update={"payload": {}})


@pytest.mark.redis
async def test_a_subscriber_on_another_replica_hears_the_change_through_redis(
    store: SqlStore, redis_url: str, redis_prefix: str
) -> None:
    from forecourt.gateway.backends.events import RedisEventBus
    from forecourt.gateway.backends.redis import RedisIdempotencyStore, connect_redis

    client_a, client_b = connect_redis(redis_url), connect_redis(redis_url)
    bus_a, bus_b = RedisEventBus(client_a, prefix=redis_prefix), RedisEventBus(client_b, prefix=redis_prefix)
    try:
        replica_a = OutboxDispatcher(store, bus_a, claims=RedisIdempotencyStore(client_a, prefix=redis_prefix))
        replica_b = OutboxDispatcher(store, bus_b, claims=RedisIdempotencyStore(client_b, prefix=redis_prefix))
        await replica_a.start_position()
        await replica_b.start_position()
        async with replica_b.subscribe("d1") as heard_on_b:
            await _append(store, _event(9))
            assert await replica_a.poll_once() == 1
            assert await replica_b.poll_once() == 0  # already claimed by replica A
            got = await asyncio.wait_for(anext(heard_on_b), 5)
        assert got.id == "evt_9"
    finally:
        await bus_a.close()
        await bus_b.close()
        await client_a.aclose()
        await client_b.aclose()
