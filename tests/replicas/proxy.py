"""A small round-robin HTTP/1.1 reverse proxy on loopback: every request goes to the next upstream.

It stands in for a load balancer with no session affinity. Each request (request line, headers and a
``Content-Length`` or chunked body) is read from the client, sent to the next upstream on a fresh connection
with ``Connection: close``, and the response is relayed byte for byte until the upstream closes it — so
streamed (SSE) responses flow as they are produced. The client's own connection stays open for its next
request, which goes to the other upstream.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter

_HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"upgrade"}
MAX_HEAD = 65536


class RoundRobinProxy:
    """Listens on ``127.0.0.1`` and alternates requests between ``upstreams`` (set before the first request).

    Attributes:
        counts: How many requests each upstream port was sent.
        streams_opened: How many ``GET`` event streams upstreams have answered (a test can wait for one).
    """

    def __init__(self) -> None:
        self.upstreams: list[tuple[str, int]] = []
        self.counts: Counter[int] = Counter()
        self.streams_opened = 0
        self.port = 0
        self._cycle: itertools.cycle[tuple[str, int]] | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def route_to(self, upstreams: list[tuple[str, int]]) -> None:
        """Alternate between ``upstreams`` from the next request on."""
        self.upstreams = list(upstreams)
        self._cycle = itertools.cycle(self.upstreams)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def _track(self, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._track(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                if not await self._forward(request, writer):
                    return
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            return
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _forward(self, request: bytes, client: asyncio.StreamWriter) -> bool:
        assert self._cycle is not None, "route_to() first"
        host, port = next(self._cycle)
        self.counts[port] += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            client.write(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            await client.drain()
            return True
        self._track(up_writer)
        try:
            up_writer.write(request)
            await up_writer.drain()
            head = await up_reader.readuntil(b"\r\n\r\n")
            client.write(_strip_hop_by_hop(head))
            await client.drain()
            if request.startswith(b"GET ") and b"text/event-stream" in head.lower():
                self.streams_opened += 1  # the upstream has set the stream up once it answers
            while data := await up_reader.read(65536):
                client.write(data)
                await client.drain()
        finally:
            self._writers.discard(up_writer)
            up_writer.close()
        return True


def _strip_hop_by_hop(head: bytes) -> bytes:
    lines = head.split(b"\r\n")
    kept = [lines[0]] + [ln for ln in lines[1:] if ln and ln.split(b":", 1)[0].strip().lower() not in _HOP_BY_HOP]
    return b"\r\n".join(kept) + b"\r\n\r\n"


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    """One whole request, re-framed for the upstream (``Connection: close``), or ``None`` at end of stream."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise
        return None
    if len(head) > MAX_HEAD:
        raise ValueError("request head too large")
    lines = head[:-4].split(b"\r\n")
    headers = [ln for ln in lines[1:] if ln.split(b":", 1)[0].strip().lower() not in _HOP_BY_HOP]
    fields = {ln.split(b":", 1)[0].strip().lower(): ln.split(b":", 1)[1].strip() for ln in headers if b":" in ln}
    body = b""
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        body = await _read_chunked(reader)
    elif b"content-length" in fields:
        body = await reader.readexactly(int(fields[b"content-length"]))
    out = [lines[0], *headers, b"Connection: close"]
    return b"\r\n".join(out) + b"\r\n\r\n" + body


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body, verbatim (chunks, the last chunk and trailers)."""
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        parts.append(size_line)
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while True:
                trailer = await reader.readuntil(b"\r\n")
                parts.append(trailer)
                if trailer == b"\r\n":
                    return b"".join(parts)
        parts.append(await reader.readexactly(size + 2))
