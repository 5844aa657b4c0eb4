"""Event bus: fan change events out to every subscriber, on this replica or (through Redis) on all of them.

Delivery is at most once and best effort, as Redis pub/sub is: a message published while nobody
listens, or while Redis is down, is gone. Callers that need every event read the store's outbox;
the bus only wakes subscribers up promptly (MCP resource subscriptions on any replica).

Subscribing is explicit so no message is missed between "subscribe" and "publish"::

    async with bus.subscribe("inventory:demo-toyota-sf") as sub:
        ...  # from here on, every message published on the channel reaches ``sub``
        async for message in sub:
            ...

Each subscription has a bounded queue; a subscriber that falls that far behind loses its oldest
messages (counted in ``Subscription.dropped``) rather than slowing the publisher or other subscribers.

Failure behaviour of :class:`RedisEventBus`: ``publish`` never raises when Redis is down (the message is
dropped and a warning logged once per interval); ``subscribe`` raises :class:`~forecourt.errors.Overloaded`
when it cannot reach Redis. Existing subscriptions survive an outage: the reader reconnects with
backoff and redis-py re-subscribes every channel, so delivery resumes once Redis is back. A quiet
connection is pinged, so a Redis host that vanished without closing the socket is noticed too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from forecourt.errors import Overloaded
from forecourt.gateway.backends.common import WarnThrottle

if TYPE_CHECKING:  # redis is imported with the Redis backends, when settings name a Redis server
    import redis.asyncio as aioredis

logger = logging.getLogger(__name__)

DEFAULT_MAX_QUEUE = 1000
_CLOSED = object()


class Subscription:
    """A live subscription to one channel: an async iterator of messages and an async context manager.

    Made by :meth:`EventBus.subscribe`; it is attached on ``__aenter__`` (or the first ``__anext__``)
    and detached by :meth:`aclose` / ``__aexit__``, after which iteration ends.
    """

    def __init__(
        self,
        channel: str,
        attach: Callable[[Subscription], Awaitable[None]],
        detach: Callable[[Subscription], Awaitable[None]],
        max_queue: int = DEFAULT_MAX_QUEUE,
    ) -> None:
        self.channel = channel
        self.dropped = 0
        self._attach = attach
        self._detach = detach
        self._max_queue = max_queue
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._started = False
        self._closed = False

    async def start(self) -> None:
        """Attach to the channel; returns once messages published from now on will arrive."""
        if self._started or self._closed:
            return
        self._started = True
        try:
            await self._attach(self)
        except BaseException:
            self._started = False
            raise

    def deliver(self, message: bytes) -> None:
        """Queue one message (called by the bus); drops the oldest if the subscriber is too far behind."""
        if self._closed:
            return
        if self._queue.qsize() >= self._max_queue:
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % self._max_queue == 0:
                logger.warning("Event subscriber on %s is too slow; %d messages dropped", self.channel, self.dropped)
        self._queue.put_nowait(message)

    async def aclose(self) -> None:
        """Detach and end iteration; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put_nowait(_CLOSED)
        if self._started:
            await self._detach(self)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> bytes:
        await self.start()
        item = await self._queue.get()
        if item is _CLOSED:
            self._queue.put_nowait(_CLOSED)
            raise StopAsyncIteration
        assert isinstance(item, bytes)
        return item

    async def __aenter__(self) -> Subscription:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class EventBus(Protocol):
    """Publish bytes on a named channel; every current subscriber of that channel gets them."""

    async def publish(self, channel: str, message: bytes) -> None:
        """Send ``message`` to every subscriber of ``channel``, on every replica sharing the bus."""
        ...

    def subscribe(self, channel: str) -> Subscription:
        """A subscription to ``channel``; enter it (``async with``) before relying on delivery."""
        ...

    async def close(self) -> None:
        """End every subscription and release connections."""
        ...


class _Fanout:
    """Local subscribers by channel."""

    def __init__(self) -> None:
        self.channels: dict[str, set[Subscription]] = {}

    def add(self, sub: Subscription) -> bool:
        """Add ``sub``; True if it is the channel's first subscriber."""
        subs = self.channels.setdefault(sub.channel, set())
        subs.add(sub)
        return len(subs) == 1

    def remove(self, sub: Subscription) -> bool:
        """Remove ``sub``; True if the channel has no subscriber left."""
        subs = self.channels.get(sub.channel)
        if subs is None or sub not in subs:
            return False
        subs.discard(sub)
        if subs:
            return False
        del self.channels[sub.channel]
        return True

    def deliver(self, channel: str, message: bytes) -> int:
        subs = self.channels.get(channel, ())
        for sub in list(subs):
            sub.deliver(message)
        return len(subs)

    def all(self) -> list[Subscription]:
        return [sub for subs in self.channels.values() for sub in subs]


class MemoryEventBus:
    """Fan-out to the subscribers of this process, through one queue each.

    Args:
        max_queue: Messages buffered per subscriber before the oldest are dropped.
    """

    def __init__(self, max_queue: int = DEFAULT_MAX_QUEUE) -> None:
        self._fanout = _Fanout()
        self._max_queue = max_queue

    async def publish(self, channel: str, message: bytes) -> None:
        """Deliver ``message`` to every current subscriber of ``channel``."""
        self._fanout.deliver(channel, bytes(message))

    def subscribe(self, channel: str) -> Subscription:
        """A subscription to ``channel``."""
        return Subscription(channel, self._attach, self._detach, self._max_queue)

    async def close(self) -> None:
        """End every subscription."""
        for sub in self._fanout.all():
            await sub.aclose()

    async def _attach(self, sub: Subscription) -> None:
        self._fanout.add(sub)

    async def _detach(self, sub: Subscription) -> None:
        self._fanout.remove(sub)


class RedisEventBus:
    """Redis pub/sub shared by every replica: one connection per replica, fanned out to local subscribers.

    Channels are ``<prefix>bus:<channel>``. The Redis channel is subscribed when its first local
    subscriber attaches and unsubscribed when its last one leaves.

    Args:
        client: A client from :func:`forecourt.gateway.backends.redis.connect_redis`.
        prefix: Key prefix shared by every replica of one deployment.
        max_queue: Messages buffered per subscriber before the oldest are dropped.
        confirm_timeout_s: How long ``subscribe`` waits for Redis to confirm the subscription.
        ping_interval_s: After this long without traffic the reader pings Redis ...
        ping_timeout_s: ... and drops the connection (then reconnects and re-subscribes) if no answer comes
            this fast: a Redis host that vanished without closing the socket is noticed, not waited on forever.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str = "forecourt:",
        max_queue: int = DEFAULT_MAX_QUEUE,
        confirm_timeout_s: float = 2.0,
        ping_interval_s: float = 15.0,
        ping_timeout_s: float = 5.0,
    ) -> None:
        from forecourt.gateway.backends.redis import UNAVAILABLE

        self._unavailable = UNAVAILABLE
        self._client = client
        self._ping_interval_s = ping_interval_s
        self._ping_timeout_s = ping_timeout_s
        self._prefix = f"{prefix}bus:"
        self._max_queue = max_queue
        self._confirm_timeout_s = confirm_timeout_s
        self._fanout = _Fanout()
        self._pubsub: Any = client.pubsub()
        self._confirmed: dict[str, asyncio.Event] = {}
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self._publish_warn = WarnThrottle(logger, "event bus (publish)")
        self._read_warn = WarnThrottle(logger, "event bus (subscriptions)")

    async def publish(self, channel: str, message: bytes) -> None:
        """Publish ``message`` to every replica; dropped (with a throttled warning) if Redis is unavailable."""
        try:
            await self._client.publish(self._prefix + channel, message)
        except self._unavailable as exc:
            self._publish_warn.failed(exc, "event dropped")
            return
        self._publish_warn.succeeded()

    def subscribe(self, channel: str) -> Subscription:
        """A subscription to ``channel``; entering it raises ``Overloaded`` if Redis is unreachable."""
        return Subscription(channel, self._attach, self._detach, self._max_queue)

    async def close(self) -> None:
        """End every subscription, stop the reader and close the pub/sub connection."""
        self._closed = True
        for sub in self._fanout.all():
            await sub.aclose()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        with contextlib.suppress(*self._unavailable):
            await self._pubsub.aclose()

    async def _attach(self, sub: Subscription) -> None:
        if self._closed:
            raise Overloaded()
        name = self._prefix + sub.channel
        async with self._lock:
            if self._fanout.add(sub):
                self._confirmed[name] = asyncio.Event()
                try:
                    await self._pubsub.subscribe(name)
                except self._unavailable as exc:
                    self._fanout.remove(sub)
                    self._confirmed.pop(name, None)
                    self._read_warn.failed(exc, "a subscription was refused")
                    raise Overloaded() from exc
                self._ensure_reader()
            confirmed = self._confirmed[name]
        try:
            await asyncio.wait_for(confirmed.wait(), self._confirm_timeout_s)
        except TimeoutError as exc:
            await self._detach(sub)
            raise Overloaded() from exc

    async def _detach(self, sub: Subscription) -> None:
        name = self._prefix + sub.channel
        async with self._lock:
            if not self._fanout.remove(sub):
                return
            self._confirmed.pop(name, None)
            try:
                await self._pubsub.unsubscribe(name)
            except self._unavailable as exc:
                # Harmless: messages for a channel nobody here listens to are dropped on arrival.
                self._read_warn.failed(exc, "an unsubscribe was not sent")

    def _ensure_reader(self) -> None:
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read_loop(), name="forecourt-event-bus")
            self._reader.add_done_callback(self._reader_done)

    @staticmethod
    def _reader_done(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            # The next subscribe starts a new reader; until then this replica's subscribers hear nothing.
            logger.error("Event bus reader stopped", exc_info=task.exception())

    async def _read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        backoff = 0.05
        last_seen, ping_sent = loop.time(), None
        while not self._closed:
            try:
                message = await self._pubsub.get_message(timeout=min(1.0, self._ping_interval_s))
                if message is not None:
                    last_seen, ping_sent = loop.time(), None
                    self._read_warn.succeeded()
                    self._dispatch(message)
                else:
                    ping_sent = await self._keepalive(loop.time(), last_seen, ping_sent)
            except self._unavailable as exc:
                self._read_warn.failed(exc, "reconnecting; events published meanwhile are lost")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
                last_seen, ping_sent = loop.time(), None
                continue
            backoff = 0.05

    async def _keepalive(self, now: float, last_seen: float, ping_sent: float | None) -> float | None:
        """Ping a quiet connection; drop it when a ping goes unanswered (the next read reconnects)."""
        if ping_sent is None:
            if now - last_seen < self._ping_interval_s:
                return None
            await self._pubsub.ping()
            return now
        if now - ping_sent < self._ping_timeout_s:
            return ping_sent
        logger.warning("Event bus connection to Redis went silent; reconnecting")
        await self._pubsub.connection.disconnect()
        return None

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        raw = message.get("channel")
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
        if kind == "subscribe":
            event = self._confirmed.get(name)
            if event is not None:
                event.set()
        elif kind == "message" and name.startswith(self._prefix):
            data = message.get("data")
            if isinstance(data, bytes):
                self._fanout.deliver(name[len(self._prefix) :], data)
