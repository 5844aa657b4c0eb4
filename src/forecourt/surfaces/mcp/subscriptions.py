"""Level 3 eventing over MCP: outbox change events → resource-updated notifications in both protocol eras.

Changes reach this replica through :class:`~forecourt.events.OutboxDispatcher` and the event bus (Redis when
configured, so a change made on any replica is heard here). The relay follows only the dealerships some
local client watches (one bus subscription per dealership, reference-counted) and, for each event, notifies
the resource's URI and its collection's URI:

- 2025-11-25 sessions that ``resources/subscribe``-d to one of them get ``notifications/resources/updated``
  on their standalone stream (over HTTP through :mod:`~forecourt.surfaces.mcp.sessions`, which any replica
  can serve; over stdio through the SDK session);
- 2026-07-28 ``subscriptions/listen`` streams get the same through the SDK's subscription bus.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated

from forecourt.domain.events import ChangeEvent
from forecourt.events import OutboxDispatcher
from forecourt.surfaces.mcp.uris import event_uris

logger = logging.getLogger(__name__)

ATTACH_TIMEOUT_S = 5.0


class SubscriptionRelay:
    """Fans change events out to the MCP clients of this process.

    Args:
        dispatcher: Source of change events (``None``: eventing is off and subscriptions never fire).
    """

    def __init__(self, dispatcher: OutboxDispatcher | None) -> None:
        self.dispatcher = dispatcher
        self.bus = InMemorySubscriptionBus()
        self.sessions: dict[str, dict[str, ServerSession]] = {}
        self._session_uris: dict[str, dict[str, str]] = {}
        self._refs: dict[str, int] = {}
        self._followers: dict[str, asyncio.Task[None]] = {}
        self._streams: dict[str, set[Any]] = {}
        self.delivered = 0

    @property
    def enabled(self) -> bool:
        """Whether change events flow (the manifest claims Level 3 only then)."""
        return self.dispatcher is not None

    async def acquire(self, dealership_id: str) -> None:
        """Start following ``dealership_id`` (if nobody here does yet); returns once events will arrive."""
        self._refs[dealership_id] = self._refs.get(dealership_id, 0) + 1
        if self.dispatcher is None or dealership_id in self._followers:
            return
        attached: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._follow(dealership_id, attached), name=f"mcp-events-{dealership_id}")
        self._followers[dealership_id] = task
        try:
            await asyncio.wait_for(asyncio.shield(attached), ATTACH_TIMEOUT_S)
        except BaseException:
            self.release(dealership_id)
            raise

    def release(self, dealership_id: str) -> None:
        """Stop following ``dealership_id`` once nobody here watches it."""
        count = self._refs.get(dealership_id, 0) - 1
        if count > 0:
            self._refs[dealership_id] = count
            return
        self._refs.pop(dealership_id, None)
        task = self._followers.pop(dealership_id, None)
        if task is not None:
            task.cancel()

    async def _follow(self, dealership_id: str, attached: asyncio.Future[None]) -> None:
        assert self.dispatcher is not None
        try:
            async with self.dispatcher.subscribe(dealership_id) as events:
                if not attached.done():
                    attached.set_result(None)
                async for event in events:
                    await self.deliver(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bus failure ends this follower; the next subscriber starts a new one
            logger.warning("MCP event follower for a dealership stopped: %s", type(exc).__name__)
            if not attached.done():
                attached.set_exception(exc)
            if self._followers.get(dealership_id) is asyncio.current_task():
                self._followers.pop(dealership_id, None)

    async def deliver(self, event: ChangeEvent) -> None:
        """Notify every local subscriber of the resource and of its collection."""
        for uri in event_uris(event.dealership_id, event.resource_type, event.resource_id):
            await self.bus.publish(ResourceUpdated(uri=uri))
            for session in list(self.sessions.get(uri, {}).values()):
                with contextlib.suppress(Exception):  # best effort: a closed stream must not stop the others
                    await session.send_resource_updated(uri)
                    self.delivered += 1
        for stream in list(self._streams.get(event.dealership_id, ())):
            with contextlib.suppress(Exception):  # it filters by its own subscriptions (legacy HTTP sessions)
                await stream.offer(event)

    def add_stream(self, dealership_id: str, stream: Any) -> None:
        """Hand every event of ``dealership_id`` to ``stream`` (an object with ``async offer(event)``)."""
        self._streams.setdefault(dealership_id, set()).add(stream)

    def remove_stream(self, dealership_id: str, stream: Any) -> None:
        """Stop handing events to ``stream``."""
        streams = self._streams.get(dealership_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self._streams[dealership_id]

    def add_session(self, uri: str, session_key: str, session: ServerSession, dealership_id: str) -> bool:
        """Record a legacy subscription; returns False when it already existed."""
        by_session = self.sessions.setdefault(uri, {})
        known = session_key in by_session
        by_session[session_key] = session
        if known:
            return False
        self._session_uris.setdefault(session_key, {})[uri] = dealership_id
        return True

    def remove_session(self, uri: str, session_key: str) -> str | None:
        """Forget a legacy subscription; returns its dealership (to release) when it existed."""
        by_session = self.sessions.get(uri)
        if by_session is None or by_session.pop(session_key, None) is None:
            return None
        if not by_session:
            del self.sessions[uri]
        return self._session_uris.get(session_key, {}).pop(uri, None)

    def drop_session(self, session_key: str) -> None:
        """Forget every subscription of an ended session and release its dealerships."""
        for uri, dealership_id in list(self._session_uris.pop(session_key, {}).items()):
            by_session = self.sessions.get(uri)
            if by_session is not None:
                by_session.pop(session_key, None)
                if not by_session:
                    del self.sessions[uri]
            self.release(dealership_id)

    async def close(self) -> None:
        """Stop every follower."""
        tasks = list(self._followers.values())
        self._followers.clear()
        self._refs.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    def stats(self) -> dict[str, Any]:
        """Counts for tests and diagnostics."""
        return {"dealerships": sorted(self._followers), "uris": len(self.sessions), "delivered": self.delivered}
