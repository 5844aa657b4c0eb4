"""Resumable response streams of legacy (2025-11-25) POSTs: priming events, event ids, ``Last-Event-ID``.

Streamable HTTP (2025-11-25, "Resumability and Redelivery") lets a server give each SSE event an id and the
client reconnect after a dropped stream with ``GET`` and ``Last-Event-ID`` to get what it missed. Forecourt's
legacy sessions run on the SDK's stateless transport, which keeps no event store, so this module adds it around
the transport, for a POST answered as an event stream within a session that negotiated 2025-11-25:

- **Priming.** The stream opens with ``id: <stream>.<n>``, ``retry: <ms>`` and empty data (the spec's priming
  event), then every event the SDK (or the back channel) writes gets the next id.
- **Recording.** Each event is appended to an :class:`EventLog` under the session id: Redis streams when
  ``settings.redis_url`` is set (``<prefix>mcp:sse:<session digest>:<stream>``, so a client may resume on any
  replica), else this process's memory. Both are bounded (:data:`MAX_EVENTS` per stream, :data:`MAX_STREAMS`
  streams in memory) and expire :data:`STREAM_TTL_S` after a stream's last event.
- **A dropped client** does not cancel the call: the request runs on to its answer (bounded by the action's own
  timeout) and its events are still recorded.
- **Resuming.** ``GET`` with ``Last-Event-ID`` (and the session id) replays the events of that one stream after
  that id, then follows it live until its answer. An id of another session, of a stream no longer kept or in a
  form never issued is answered ``400``.

The 2026-07-28 era has no resumption: there, closing a response stream cancels the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis.asyncio as aioredis
from starlette.types import Message, Receive, Scope, Send

from forecourt.gateway.backends.redis import UNAVAILABLE

logger = logging.getLogger(__name__)

RETRY_MS = 1000
"""The ``retry:`` of the priming event: how long a client waits before reconnecting."""
STREAM_TTL_S = 300.0
"""How long a stream's events are kept after its last event."""
MAX_EVENTS = 1000
"""Events kept per stream (the oldest go first)."""
MAX_STREAMS = 2000
"""Streams kept in one process's memory (the least recently written go first)."""
POLL_MS = 1000
"""How long one blocking read of a Redis stream waits (below the client's socket timeout)."""

Event = tuple[str, str, str]
"""``(event id, event type, data)``."""


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()[:24]


def split_event_id(event_id: str) -> tuple[str, str] | None:
    """``(stream, position)`` of an id this module issued, else ``None``."""
    stream, dot, position = event_id.partition(".")
    if not dot or not stream or not position or len(event_id) > 96:
        return None
    return stream, position


class EventLog(Protocol):
    """Where the events of resumable streams are kept, by session and stream."""

    async def append(self, session_id: str, stream: str, event: str, data: str) -> str:
        """Record one event; returns its id."""

    async def finish(self, session_id: str, stream: str) -> None:
        """The stream carried its answer: nothing follows."""

    def replay(self, session_id: str, event_id: str) -> AsyncIterator[Event] | None:
        """The events after ``event_id`` of its stream, then live ones until the stream finishes (or expires).

        ``None`` when no such stream is kept for this session.
        """

    async def close(self) -> None:
        """Release connections."""


@dataclass
class _Stream:
    events: list[Event] = field(default_factory=list)
    first: int = 0
    """Position of ``events[0]``."""
    done: bool = False
    touched: float = field(default_factory=time.monotonic)
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class MemoryEventLog:
    """One process: the stream and its resumption are served here."""

    def __init__(self, *, max_streams: int = MAX_STREAMS, max_events: int = MAX_EVENTS) -> None:
        self._streams: OrderedDict[str, _Stream] = OrderedDict()
        self.max_streams = max_streams
        self.max_events = max_events

    def _get(self, key: str) -> _Stream | None:
        stream = self._streams.get(key)
        if stream is not None and time.monotonic() - stream.touched > STREAM_TTL_S:
            del self._streams[key]
            return None
        return stream

    async def append(self, session_id: str, stream: str, event: str, data: str) -> str:
        key = f"{_digest(session_id)}:{stream}"
        kept = self._get(key)
        if kept is None:
            kept = self._streams[key] = _Stream()
            while len(self._streams) > self.max_streams:
                self._streams.popitem(last=False)
        self._streams.move_to_end(key)
        position = kept.first + len(kept.events)
        event_id = f"{stream}.{position}"
        kept.events.append((event_id, event, data))
        if len(kept.events) > self.max_events:
            del kept.events[0]
            kept.first += 1
        kept.touched = time.monotonic()
        kept.changed.set()
        kept.changed = asyncio.Event()
        return event_id

    async def finish(self, session_id: str, stream: str) -> None:
        kept = self._get(f"{_digest(session_id)}:{stream}")
        if kept is not None:
            kept.done = True
            kept.changed.set()

    def replay(self, session_id: str, event_id: str) -> AsyncIterator[Event] | None:
        parts = split_event_id(event_id)
        if parts is None or not parts[1].isdigit():
            return None
        kept = self._get(f"{_digest(session_id)}:{parts[0]}")
        if kept is None or int(parts[1]) < kept.first - 1:
            return None
        return self._follow(kept, int(parts[1]) + 1)

    async def _follow(self, kept: _Stream, position: int) -> AsyncIterator[Event]:
        while True:
            position = max(position, kept.first)
            while position < kept.first + len(kept.events):
                yield kept.events[position - kept.first]
                position += 1
            if kept.done:
                return
            changed = kept.changed
            try:
                await asyncio.wait_for(changed.wait(), STREAM_TTL_S)
            except TimeoutError:
                return

    async def close(self) -> None:
        self._streams.clear()


class RedisEventLog:
    """A Redis stream per response stream (see the module docstring); any replica can replay it."""

    def __init__(self, client: aioredis.Redis, prefix: str) -> None:
        self.client = client
        self._prefix = f"{prefix}mcp:sse:"
        self._ttl = int(STREAM_TTL_S)

    def _key(self, session_id: str, stream: str) -> str:
        return f"{self._prefix}{_digest(session_id)}:{stream}"

    async def _add(self, key: str, fields: dict[str, str]) -> str:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.xadd(key, fields, maxlen=MAX_EVENTS, approximate=False)  # type: ignore[arg-type]
            pipe.expire(key, self._ttl)
            entry, _ = await pipe.execute()
        return entry.decode() if isinstance(entry, bytes) else str(entry)

    async def append(self, session_id: str, stream: str, event: str, data: str) -> str:
        entry = await self._add(self._key(session_id, stream), {"e": event, "d": data})
        return f"{stream}.{entry}"

    async def finish(self, session_id: str, stream: str) -> None:
        with contextlib.suppress(*UNAVAILABLE):  # a resuming client then waits until the stream expires
            await self._add(self._key(session_id, stream), {"end": "1"})

    def replay(self, session_id: str, event_id: str) -> AsyncIterator[Event] | None:
        parts = split_event_id(event_id)
        if parts is None:
            return None
        stream, entry = parts
        return self._follow(self._key(session_id, stream), stream, entry)

    async def _follow(self, key: str, stream: str, after: str) -> AsyncIterator[Event]:
        while True:
            answer: Any = await self.client.xread({key: after}, count=100, block=POLL_MS)
            if not answer:
                if not await self.client.exists(key):
                    return
                continue
            for entry_id, fields in answer[0][1]:
                after = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                values = {_text(k): _text(v) for k, v in fields.items()}
                if "end" in values:
                    return
                yield f"{stream}.{after}", values.get("e", "message"), values.get("d", "")

    async def known(self, session_id: str, event_id: str) -> bool:
        """Whether the stream of ``event_id`` is still kept for this session."""
        parts = split_event_id(event_id)
        return parts is not None and bool(await self.client.exists(self._key(session_id, parts[0])))

    async def close(self) -> None:
        return None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def event_log_for(client: aioredis.Redis | None, prefix: str) -> EventLog:
    """Redis when the legacy sessions' registry has a client (replicas share it), else this process's memory."""
    return RedisEventLog(client, prefix) if client is not None else MemoryEventLog()


def _sse(event_id: str, event: str, data: str, retry_ms: int | None = None) -> bytes:
    lines = [f"id: {event_id}"]
    if retry_ms is not None:
        lines.append(f"retry: {retry_ms}")
    if (event and event != "message") or data:
        lines.append(f"event: {event or 'message'}")
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _parse_block(block: bytes) -> tuple[str, str] | None:
    """``(event, data)`` of one SSE event block; ``None`` for a comment-only block (a keep-alive)."""
    event = "message"
    data: list[str] = []
    seen = False
    for raw in block.decode("utf-8", "replace").splitlines():
        if not raw or raw.startswith(":"):
            continue
        name, _, value = raw.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event, seen = value, True
        elif name == "data":
            data.append(value)
            seen = True
    return (event, "\n".join(data)) if seen else None


def _is_event_stream(message: Message) -> bool:
    for key, value in message.get("headers") or ():
        if key.lower() == b"content-type":
            return bytes(value).lower().startswith(b"text/event-stream")
    return False


class RecordedResponse:
    """Wraps the ``send``/``receive`` of one legacy POST of a resumable session (see the module docstring)."""

    def __init__(self, send: Send, receive: Receive, log: EventLog, session_id: str) -> None:
        self._send = send
        self._receive = receive
        self.log = log
        self.session_id = session_id
        self.stream = secrets.token_urlsafe(12)
        self.event_stream = False
        self.recording = True
        self.connected = True
        self.finished = asyncio.Event()
        self._buffer = b""

    async def _append(self, event: str, data: str) -> str | None:
        """Record one event; ``None`` (and no more ids on this stream) when the log is unavailable."""
        if not self.recording:
            return None
        try:
            return await self.log.append(self.session_id, self.stream, event, data)
        except UNAVAILABLE:
            logger.warning("an MCP response stream could not be recorded; it is not resumable")
            self.recording = False
            return None

    async def _forward(self, message: Message) -> None:
        if not self.connected:
            return
        try:
            await self._send(message)
        except OSError:
            self.connected = False

    async def send(self, message: Message) -> None:
        """The ``send`` given to the app."""
        if message["type"] == "http.response.start":
            self.event_stream = _is_event_stream(message)
            await self._forward(message)
            if self.event_stream:
                primer = await self._append("", "")
                if primer is not None:
                    body = _sse(primer, "", "", RETRY_MS)
                    await self._forward({"type": "http.response.body", "body": body, "more_body": True})
            return
        if message["type"] != "http.response.body" or not self.event_stream:
            await self._forward(message)
            return
        self._buffer += message.get("body", b"")
        out = b""
        while True:
            cut = _block_end(self._buffer)
            if cut is None:
                break
            block, self._buffer = self._buffer[: cut[0]], self._buffer[cut[1] :]
            parsed = _parse_block(block)
            if parsed is None:
                out += block + b"\r\n\r\n"
                continue
            event_id = await self._append(*parsed)
            out += _sse(event_id, *parsed) if event_id is not None else block + b"\r\n\r\n"
        more = bool(message.get("more_body", False))
        if not more:
            if self.recording:
                await self.log.finish(self.session_id, self.stream)
            self.finished.set()
        await self._forward({"type": "http.response.body", "body": out, "more_body": more})

    async def receive(self) -> Message:
        """The ``receive`` given to the app: a client gone from an event stream is not reported until its end."""
        message = await self._receive()
        if message["type"] == "http.disconnect" and self.event_stream and self.recording:
            self.connected = False
            await self.finished.wait()
        return message

    def end(self) -> None:
        """The app returned."""
        self.finished.set()


def _block_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first complete SSE block of ``buffer`` ends: (end of block, start of the rest)."""
    found: tuple[int, int] | None = None
    for sep in (b"\r\n\r\n", b"\n\n", b"\r\r"):
        at = buffer.find(sep)
        if at >= 0 and (found is None or at < found[0]):
            found = (at, at + len(sep))
    return found


async def resume(
    scope: Scope, receive: Receive, send: Send, log: EventLog, session_id: str, event_id: str, ping_s: float
) -> bool:
    """Answer a ``GET`` with ``Last-Event-ID``: the rest of that stream. ``False`` when there is nothing to resume."""
    if isinstance(log, RedisEventLog) and not await log.known(session_id, event_id):
        return False
    events = log.replay(session_id, event_id)
    if events is None:
        return False
    headers = [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-cache, no-transform"),
        (b"mcp-session-id", session_id.encode()),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    try:
        await _pump(events, receive, send, ping_s)
    finally:
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    return True


async def _pump(events: AsyncIterator[Event], receive: Receive, send: Send, ping_s: float) -> None:
    """Write ``events`` to the client (with keep-alives) until they end or the client goes away."""
    queue: asyncio.Queue[Event | None] = asyncio.Queue(64)

    async def produce() -> None:
        try:
            async for item in events:
                await queue.put(item)
        except UNAVAILABLE:
            logger.warning("a resumed MCP stream could not read its events; it ends early")
        await queue.put(None)

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        while queue.full():
            queue.get_nowait()
        queue.put_nowait(None)

    tasks = [asyncio.create_task(produce()), asyncio.create_task(watch())]
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), ping_s)
            except TimeoutError:
                await send({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})
                continue
            if item is None:
                return
            await send({"type": "http.response.body", "body": _sse(*item), "more_body": True})
    finally:
        for task in tasks:
            task.cancel()
