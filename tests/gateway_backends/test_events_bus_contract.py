"""EventBus contract: fan-out of bytes to every current subscriber of a channel; memory and Redis."""

from __future__ import annotations

import asyncio

import pytest

from forecourt.gateway.backends.events import MemoryEventBus, Subscription

from .support import Rig

WAIT_S = 3.0


async def receive(sub: Subscription) -> bytes:
    return await asyncio.wait_for(anext(sub), WAIT_S)


async def test_a_subscriber_receives_messages_in_publish_order(rig: Rig) -> None:
    bus = rig.bus()
    async with bus.subscribe("inventory:demo-toyota-sf") as sub:
        for i in range(5):
            await bus.publish("inventory:demo-toyota-sf", f"change-{i}".encode())
        assert [await receive(sub) for _ in range(5)] == [f"change-{i}".encode() for i in range(5)]


async def test_every_subscriber_of_a_channel_receives_each_message(rig: Rig) -> None:
    bus = rig.bus()
    async with bus.subscribe("ch") as first, bus.subscribe("ch") as second:
        await bus.publish("ch", b"hello")
        assert await receive(first) == b"hello"
        assert await receive(second) == b"hello"


async def test_a_subscriber_does_not_receive_other_channels(rig: Rig) -> None:
    bus = rig.bus()
    async with bus.subscribe("a") as sub_a, bus.subscribe("b") as sub_b:
        await bus.publish("b", b"for-b")
        await bus.publish("a", b"for-a")
        assert await receive(sub_a) == b"for-a"
        assert await receive(sub_b) == b"for-b"


async def test_messages_published_before_subscribing_are_not_delivered(rig: Rig) -> None:
    bus = rig.bus()
    await bus.publish("ch", b"early")
    async with bus.subscribe("ch") as sub:
        await bus.publish("ch", b"late")
        assert await receive(sub) == b"late"


async def test_a_closed_subscription_ends_iteration(rig: Rig) -> None:
    bus = rig.bus()
    sub = bus.subscribe("ch")
    async with bus.subscribe("ch") as other:
        await sub.start()
        await sub.aclose()
        await bus.publish("ch", b"after-close")
        assert await receive(other) == b"after-close"
        with pytest.raises(StopAsyncIteration):
            await receive(sub)


async def test_a_channel_left_by_one_subscriber_still_reaches_the_others(rig: Rig) -> None:
    bus = rig.bus()
    async with bus.subscribe("ch") as staying:
        async with bus.subscribe("ch"):
            pass
        await bus.publish("ch", b"still-here")
        assert await receive(staying) == b"still-here"


async def test_resubscribing_after_the_last_subscriber_left_works(rig: Rig) -> None:
    bus = rig.bus()
    async with bus.subscribe("ch"):
        pass
    async with bus.subscribe("ch") as again:
        await bus.publish("ch", b"again")
        assert await receive(again) == b"again"


async def test_async_for_yields_messages_until_the_subscription_closes(rig: Rig) -> None:
    bus = rig.bus()
    received: list[bytes] = []
    async with bus.subscribe("ch") as sub:
        for i in range(3):
            await bus.publish("ch", b"%d" % i)

        async def collect() -> None:
            async for message in sub:
                received.append(message)
                if len(received) == 3:
                    await sub.aclose()

        await asyncio.wait_for(collect(), WAIT_S)
    assert received == [b"0", b"1", b"2"]


async def test_closing_the_bus_ends_every_subscription(rig: Rig) -> None:
    bus = rig.bus()
    sub = bus.subscribe("ch")
    await sub.start()
    await bus.close()
    with pytest.raises(StopAsyncIteration):
        await receive(sub)


async def test_publishing_to_a_channel_without_subscribers_is_a_no_op(rig: Rig) -> None:
    await rig.bus().publish("nobody-listens", b"x")


async def test_a_slow_subscriber_loses_its_oldest_messages_not_the_newest() -> None:
    bus = MemoryEventBus(max_queue=2)
    async with bus.subscribe("ch") as sub:
        for i in range(4):
            await bus.publish("ch", b"%d" % i)
        assert sub.dropped == 2
        assert [await receive(sub), await receive(sub)] == [b"2", b"3"]
