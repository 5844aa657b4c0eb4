"""The outbox dispatcher: tails the store's outbox and publishes each change event on the event bus.

Every change to a vehicle, lead, appointment, repair order, customer or consent grant is written to the
outbox in the same transaction as the change (the repositories do it). This dispatcher turns those rows
into live notifications: it polls the outbox in ``seq`` order and publishes every new event on the
channel ``changes:<dealership_id>`` of an :class:`~forecourt.gateway.backends.events.EventBus`. With the Redis
bus, a subscriber connected to any replica hears about a change made through any other replica (or an
import run from the CLI). Front doors subscribe with :meth:`OutboxDispatcher.subscribe`.

Delivery guarantees:

- At least once while the process runs: each event is published once per dispatcher; with several
  replicas sharing Redis, pass ``claims`` (the shared idempotency store) so only one replica publishes
  a given event. A replica that claims an event and dies before publishing loses that live notification;
  the ``events.list`` replay feed (same outbox) is the backstop, and consumers must be idempotent on the
  event id anyway.
- Events committed out of ``seq`` order (concurrent PostgreSQL transactions) are picked up when they
  land within ``overlap`` sequence numbers behind the newest event already seen: each poll reads the
  sequence numbers in that window (not the events) and reads and publishes only those not seen yet.
- The dispatcher starts at the end of the outbox: history is for ``events.list``, not for live streams.

A poll is one read-only unit of work (on SQLite it runs on the event loop's own read connection, with no
hand-over to a driver thread and no write lock), so a quiet outbox costs two index lookups per poll.

Given ``generations`` (a :class:`~forecourt.gateway.freshness.ChangeGenerations`), every event it reads
(including the ones another replica claims) moves that dealership's cache generation on, and each poll
marks the generations live (or not, when it fails): that is what invalidates cached inventory reads.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

from forecourt.domain.events import ChangeEvent
from forecourt.domain.timeutil import parse_rfc3339, rfc3339

if TYPE_CHECKING:  # runtime imports would close a cycle through forecourt.gateway.backends
    from forecourt.gateway.backends.events import EventBus
    from forecourt.gateway.base import IdempotencyStore
    from forecourt.gateway.freshness import ChangeGenerations
    from forecourt.store.base import OutboxRepository, Store

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "changes:"
CLAIM_TTL_S = 3600.0


def event_channel(dealership_id: str) -> str:
    """The bus channel carrying one dealership's change events."""
    return f"{CHANNEL_PREFIX}{dealership_id}"


def encode_event(event: ChangeEvent) -> bytes:
    """The wire form of an event on the bus (the payload is left out: it may carry PII)."""
    body = {
        "id": event.id,
        "seq": event.seq,
        "dealership_id": event.dealership_id,
        "resource_type": event.resource_type.value,
        "resource_id": event.resource_id,
        "change_type": event.change_type.value,
        "status": event.status,
        "occurred_at": rfc3339(event.occurred_at),
    }
    return json.dumps(body, separators=(",", ":")).encode()


def decode_event(message: bytes) -> ChangeEvent | None:
    """The event in a bus message, or ``None`` when the message is not one (logged, never raised)."""
    try:
        body: dict[str, Any] = json.loads(message)
        body["occurred_at"] = parse_rfc3339(str(body["occurred_at"]))
        return ChangeEvent.model_validate(body)
    except (ValueError, KeyError, TypeError):
        logger.warning("ignored a malformed change event on the bus")
        return None


class OutboxDispatcher:
    """Publishes outbox events on the event bus, for subscribers on every replica.

    Args:
        store: The store whose outbox is tailed.
        bus: Where events are published (``services.backends.events``).
        claims: A store shared by all replicas (the Redis idempotency store) so that one replica publishes
            each event; ``None`` for a single process.
        poll_interval_s: How long to wait between polls when the outbox is quiet; :meth:`wake` cuts it short.
        batch_size: Events read per query.
        overlap: How many sequence numbers behind the newest seen event each poll re-reads (late commits).
        generations: The cache generations to move on for every event read (``None``: no result cache
            follows changes in this process).
    """

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        *,
        claims: IdempotencyStore | None = None,
        poll_interval_s: float = 0.25,
        batch_size: int = 200,
        overlap: int = 64,
        generations: ChangeGenerations | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.claims = claims
        self.poll_interval_s = poll_interval_s
        self.batch_size = max(batch_size, 1)
        self.overlap = max(overlap, 0)
        self.position: int | None = None
        self.published = 0
        self._seen: OrderedDict[str, int] = OrderedDict()  # event id -> seq, oldest first
        self._seen_seqs: set[int] = set()
        self._seen_max = max(4 * (self.overlap + self.batch_size), 1024)
        self._wake = asyncio.Event()
        self.running = asyncio.Event()
        self.generations = generations
        if generations is not None:
            generations.waker = self.wake

    def wake(self) -> None:
        """Poll now instead of at the end of the current interval (a writer in this process just committed)."""
        self._wake.set()

    async def start_position(self) -> int:
        """Begin at the end of the outbox (idempotent: later calls keep the current position)."""
        if self.position is None:
            async with self.store.read() as uow:
                position = await uow.outbox.last_seq()
                # History inside the late-commit window is not news: mark it seen so it is not pushed.
                recent = await uow.outbox.list_after(max(position - self.overlap, 0), self.overlap)
            for event in recent:
                self._remember(event)
            self.position = position
            if self.generations is not None:
                self.generations.started_at(position)
        return self.position

    async def run(self) -> None:
        """Poll and publish until cancelled (a ``services.background`` factory)."""
        try:
            await self.start_position()
            self.running.set()
            while True:
                try:
                    await self.poll_once()
                except asyncio.CancelledError:
                    raise
                except Exception:  # the loop must outlive a database blip; the next poll retries
                    logger.exception("outbox dispatch failed; retrying")
                with suppress(TimeoutError):
                    # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation racing a wake-up
                    async with asyncio.timeout(self.poll_interval_s):
                        await self._wake.wait()
                self._wake.clear()
        finally:
            if self.generations is not None:
                self.generations.stopped()

    async def poll_once(self) -> int:
        """Publish every event committed since the last poll; returns how many were published."""
        if self.generations is None:
            return await self._poll()
        ticket = self.generations.poll_started()
        try:
            count = await self._poll()
        except BaseException:
            self.generations.poll_failed()
            raise
        self.generations.poll_succeeded(ticket)
        return count

    async def _poll(self) -> int:
        position = await self.start_position()
        count = 0
        late: list[ChangeEvent] = []
        while True:
            async with self.store.read() as uow:
                if not count and self.overlap and position > 0:
                    late = await self._late(uow.outbox, position)
                batch = await uow.outbox.list_after(position, self.batch_size)
            if late:
                count += await self._publish_all(late)
                late = []
            count += await self._publish_all(batch)
            if batch:
                position = max(position, batch[-1].seq)
                self.position = position
            if len(batch) < self.batch_size:
                return count

    async def _late(self, outbox: OutboxRepository, position: int) -> list[ChangeEvent]:
        """Events inside the late-commit window (``overlap`` behind ``position``) not seen yet."""
        start = max(position - self.overlap, 0)
        missing = [seq for seq in await outbox.seqs_between(start, position) if seq not in self._seen_seqs]
        if not missing:
            return []
        events = await outbox.list_after(missing[0] - 1, position - missing[0] + 1)
        return [e for e in events if e.seq <= position and e.seq not in self._seen_seqs]

    async def _publish_all(self, events: Any) -> int:
        count = 0
        for event in events:
            if event.id in self._seen:
                continue
            self._remember(event)
            if self.generations is not None:
                # Every replica reads every event: each moves its own cache generations on.
                self.generations.observed(event.dealership_id, event.seq)
            if self.claims is not None:
                taken = await self.claims.reserve(f"outbox-dispatch:{event.id}", "1", CLAIM_TTL_S)
                if taken is not None:
                    continue
            await self.bus.publish(event_channel(event.dealership_id), encode_event(event))
            count += 1
        self.published += count
        return count

    def _remember(self, event: ChangeEvent) -> None:
        self._seen[event.id] = event.seq
        self._seen_seqs.add(event.seq)
        while len(self._seen) > self._seen_max:
            self._seen_seqs.discard(self._seen.popitem(last=False)[1])

    @asynccontextmanager
    async def subscribe(self, dealership_id: str) -> AsyncIterator[AsyncIterator[ChangeEvent]]:
        """Change events of one dealership, from any replica, as long as the context is open.

        The subscription is attached when the context is entered: every event published afterwards
        arrives. Usage::

            async with dispatcher.subscribe("demo-toyota-sf") as events:
                async for event in events:
                    ...
        """
        async with self.bus.subscribe(event_channel(dealership_id)) as sub:

            async def events() -> AsyncIterator[ChangeEvent]:
                async for message in sub:
                    event = decode_event(message)
                    if event is not None and event.dealership_id == dealership_id:
                        yield event

            yield events()
