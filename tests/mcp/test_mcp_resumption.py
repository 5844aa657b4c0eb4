"""Resumable legacy response streams: a priming event with an id and ``retry:``, and ``Last-Event-ID``.

The SDK's client drives the server through a TCP proxy that cuts the first response stream right after its
priming event, as a dropped connection would; the client then reconnects with ``GET`` and ``Last-Event-ID``
(the proxy can send that request to another replica) and must still get its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx2
import pytest
from mcp_support import LiveServer, Template, mcp_client, settings_for

PRIMING_END = b"data: \r\n\r\n"


class CuttingProxy:
    """A loopback TCP proxy: one request per connection; cuts the first response stream after its priming event.

    A request carrying ``Last-Event-ID`` goes to ``resume_to`` (another replica, or the same one).
    """

    def __init__(self, target: int, resume_to: int) -> None:
        self.target = target
        self.resume_to = resume_to
        self.cuts = 0
        self.resumed_at: list[int] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            return
        resuming = b"\r\nlast-event-id:" in head.lower()
        port = self.resume_to if resuming else self.target
        if resuming:
            self.resumed_at.append(port)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        up_writer.write(head)

        async def upstream() -> None:
            with contextlib.suppress(OSError):
                while data := await reader.read(65536):
                    up_writer.write(data)
                    await up_writer.drain()

        async def downstream() -> None:
            seen = b""
            with contextlib.suppress(OSError):
                while data := await up_reader.read(65536):
                    seen += data
                    at = seen.find(PRIMING_END) if self.cuts == 0 and b"retry: " in seen else -1
                    if at >= 0:
                        self.cuts += 1
                        keep = len(data) - (len(seen) - (at + len(PRIMING_END) + 2))  # through the chunk's CRLF
                        writer.write(data[: max(keep, 0)])
                        await writer.drain()
                        return
                    writer.write(data)
                    await writer.drain()

        pump = asyncio.create_task(upstream())
        try:
            await downstream()
        finally:
            pump.cancel()
            writer.close()
            up_writer.close()


def _one_request_per_connection(token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=60),
        limits=httpx2.Limits(max_keepalive_connections=0),
    )


async def _list_through(proxy: CuttingProxy, token: str) -> list[str]:
    async with (
        _one_request_per_connection(token) as hc,
        mcp_client(f"http://127.0.0.1:{proxy.port}/mcp", hc, "legacy") as client,
    ):
        return sorted(tool.name for tool in (await client.list_tools()).tools)


async def test_a_dropped_response_stream_is_resumed_with_last_event_id(live: LiveServer, keys: dict[str, str]) -> None:
    proxy = CuttingProxy(live.port, live.port)
    await proxy.start()
    try:
        names = await _list_through(proxy, keys["crm"])
    finally:
        await proxy.stop()
    assert proxy.cuts == 1
    assert proxy.resumed_at == [live.port]
    assert "inventory.search" in names
    assert "leads.create" in names


@pytest.mark.redis
async def test_a_stream_dropped_on_one_replica_is_resumed_on_another_through_redis(
    mcp_template: Template, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    db = mcp_template.copy_to(tmp_path)

    def replica(name: str) -> LiveServer:
        return LiveServer(
            lambda base: settings_for(
                db, public_base_url=base, redis_url=redis_url, redis_prefix=redis_prefix, instance_name=name
            )
        )

    a, b = replica("replica-a"), replica("replica-b")
    await a.start()
    await b.start()
    proxy = CuttingProxy(a.port, b.port)
    await proxy.start()
    try:
        names = await _list_through(proxy, mcp_template.keys["crm"])
    finally:
        await proxy.stop()
        a.stop()
        b.stop()
    assert proxy.cuts == 1
    assert proxy.resumed_at == [b.port]
    assert "inventory.search" in names


async def test_a_response_stream_opens_with_a_priming_event_and_retry(live: LiveServer, keys: dict[str, str]) -> None:
    headers = {"Authorization": f"Bearer {keys['crm']}", "Accept": "application/json, text/event-stream"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    async with httpx2.AsyncClient(headers=headers, timeout=30) as hc:
        opened = await hc.post(live.url, json=init)
        session = opened.headers["mcp-session-id"]
        # An older MCP-Protocol-Version header does not matter: the session negotiated 2025-11-25.
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        sent = {"mcp-session-id": session, "mcp-protocol-version": "2025-03-26"}
        answer = await hc.post(live.url, json=call, headers=sent)
        assert answer.headers["content-type"].startswith("text/event-stream")
        events = [e for e in answer.text.replace("\r\n", "\n").split("\n\n") if e.strip()]
        first = events[0].split("\n")
        assert first[0].startswith("id: ")
        assert "retry: 1000" in first
        assert "data: " in first
        assert all(e.startswith("id: ") for e in events)

        replayed = await hc.get(live.url, headers={**sent, "last-event-id": first[0][4:]})
        assert '"id":2' in replayed.text.replace(" ", "")

        stranger = await hc.get(live.url, headers={**sent, "last-event-id": "nope.1"})
        assert stranger.status_code == 400
