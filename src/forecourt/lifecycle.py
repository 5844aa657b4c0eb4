"""A process's drain: what happens between SIGTERM and exit.

``forecourt serve`` calls :meth:`Drain.begin` when the process gets SIGTERM. From then on ``/readyz`` answers
503 (the load balancer stops sending), the listener keeps serving for ``drain_period_s``, every open SSE
stream gets a last event carrying ``retry:`` and is closed (the client reconnects, through the load balancer,
to another replica), and background loops registered with :meth:`Drain.on_begin` stop taking new work.
When the period is over the server stops accepting, in-flight calls finish and the audit writer flushes
(``Services.close``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)


class SseStream:
    """One open ``text/event-stream`` response, closable from outside its handler."""

    __slots__ = ("_send", "closed")

    def __init__(self, send: Callable[[Any], Any]) -> None:
        self._send = send
        self.closed = False

    async def close_with_retry(self, retry_ms: int) -> None:
        """Send a last event telling the client to reconnect after ``retry_ms``, then end the response.

        The event has no ``data``, so EventSource clients dispatch nothing; they only learn the reconnection
        delay. Ending the response also makes the handler's pending ``receive()`` report a disconnect, so the
        handler stops its stream.
        """
        if self.closed:
            return
        self.closed = True
        body = f": forecourt is draining; reconnect\nretry: {int(retry_ms)}\n\n".encode()
        with contextlib.suppress(Exception):  # the client may already be gone
            await self._send({"type": "http.response.body", "body": body, "more_body": False})


class Drain:
    """The drain state of one app (one per ``Services``)."""

    def __init__(self, *, sse_retry_ms: int = 1000) -> None:
        self.draining = False
        self.sse_retry_ms = sse_retry_ms
        self.streams: set[SseStream] = set()
        self.callbacks: list[Callable[[], Any]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.requests_open = 0
        """HTTP requests being answered now, event streams not counted (kept by the access middleware)."""

    def on_begin(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` when the drain begins (a background loop's ``stop``; may return an awaitable)."""
        self.callbacks.append(callback)

    def begin(self) -> None:
        """Start draining (idempotent; call on the event loop)."""
        if self.draining:
            return
        self.draining = True
        logger.debug("draining: /readyz answers 503, %d SSE streams told to reconnect", len(self.streams))
        for stream in list(self.streams):
            self._spawn(stream.close_with_retry(self.sse_retry_ms))
        for callback in self.callbacks:
            try:
                result = callback()
            except Exception:  # one loop failing to stop must not keep the others taking work
                logger.exception("a drain callback failed")
                continue
            if asyncio.iscoroutine(result):
                self._spawn(result)

    def opened(self, stream: SseStream) -> None:
        """A new SSE stream started; while draining it is closed at once (its client goes elsewhere)."""
        if self.draining:
            self._spawn(stream.close_with_retry(self.sse_retry_ms))
        else:
            self.streams.add(stream)

    def finished(self, stream: SseStream) -> None:
        """An SSE stream ended."""
        self.streams.discard(stream)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
