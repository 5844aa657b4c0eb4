"""The stdio bridge and a response stream that drops before its answer (a replica draining, a proxy's timeout).

A fake 2025-11-25 Streamable HTTP endpoint on a loopback socket answers ``tools/list`` with an event stream that
sends only its priming event (an id and ``retry``) and closes. The bridge resumes it with ``GET`` and
``Last-Event-ID``, as the SDK's own HTTP client does; where the server cannot resume it, the host gets an error
for that request instead of waiting for ever.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_support import wait_for
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

FORECOURT = Path(sys.executable).parent / "forecourt"
SESSION = "fake-session-1"
TOOLS = {"tools": [{"name": "inventory.search", "inputSchema": {"type": "object"}}]}


class FakeEndpoint:
    """``/mcp`` that drops the ``tools/list`` stream after its priming event; resumable when ``resumable``."""

    def __init__(self, *, resumable: bool) -> None:
        self.resumable = resumable
        self.pending: dict[str, Any] = {}
        self.resumed_from: list[str] = []

    async def handle(self, request: Request) -> Response:
        if request.method == "DELETE":
            return Response(status_code=200)
        if request.method == "GET":
            return self._resume(request)
        message = json.loads(await request.body())
        method = message.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"},
            }
            return JSONResponse(
                {"jsonrpc": "2.0", "id": message["id"], "result": result}, headers={"mcp-session-id": SESSION}
            )
        if "id" not in message:
            return Response(status_code=202)
        assert request.headers.get("mcp-session-id") == SESSION
        self.pending["s.0"] = {"jsonrpc": "2.0", "id": message["id"], "result": TOOLS}
        return _sse(b"id: s.0\nretry: 10\ndata: \n\n")  # the priming event, then the stream drops

    def _resume(self, request: Request) -> Response:
        last = request.headers.get("last-event-id")
        if last is None:
            return Response(status_code=405)  # no standalone notification stream here
        self.resumed_from.append(last)
        if not self.resumable or last not in self.pending:
            return Response(status_code=400)
        body = json.dumps(self.pending.pop(last)).encode()
        return _sse(b"id: s.1\ndata: " + body + b"\n\n")


def _sse(payload: bytes) -> StreamingResponse:
    async def body() -> Any:
        yield payload

    return StreamingResponse(body(), media_type="text/event-stream")


@contextmanager
def _serve(fake: FakeEndpoint) -> Iterator[str]:
    """``fake`` as ``/mcp`` under uvicorn on a loopback port; yields the URL."""
    app = Starlette(routes=[Route("/mcp", fake.handle, methods=["GET", "POST", "DELETE"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(params=[True, False], ids=["resumable", "not-resumable"])
def endpoint(request: pytest.FixtureRequest) -> Iterator[tuple[str, FakeEndpoint]]:
    fake = FakeEndpoint(resumable=request.param)
    with _serve(fake) as url:
        yield url, fake


async def test_a_dropped_response_stream_is_resumed_or_answered_with_an_error(
    endpoint: tuple[str, FakeEndpoint], tmp_path: Path
) -> None:
    url, fake = endpoint
    params = StdioServerParameters(
        command=str(FORECOURT),
        args=["mcp", "--stdio", "--url", url],
        env={"FORECOURT_MCP_TOKEN": "fck_desktop_" + "k" * 40},
        cwd=tmp_path,
    )
    with anyio.fail_after(60):  # a bridge that loses the answer would leave the host waiting for ever
        await _list_tools(params, fake)
    assert fake.resumed_from[:1] == ["s.0"]


async def _list_tools(params: StdioServerParameters, fake: FakeEndpoint) -> None:
    async with Client(params, mode="legacy") as client:
        if fake.resumable:
            tools = await client.list_tools()
            assert [t.name for t in tools.tools] == ["inventory.search"]
        else:
            with pytest.raises(MCPError) as dropped:
                await client.list_tools()
            assert "closed the response stream before answering" in dropped.value.error.message


class FlakyNotifications(FakeEndpoint):
    """A notification stream that ends at once the first time, carries one update the second, then is refused."""

    def __init__(self) -> None:
        super().__init__(resumable=False)
        self.gets = 0

    def _resume(self, request: Request) -> Response:
        self.gets += 1
        if self.gets == 1:
            return _sse(b"retry: 10\n\n")
        if self.gets == 2:
            update = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": URI}}
            return _sse(b"data: " + json.dumps(update).encode() + b"\n\n")
        return Response(status_code=405)


URI = "automotive://dealers/demo-toyota-sf/leads"


async def test_the_notification_stream_is_opened_again_when_it_ends(tmp_path: Path) -> None:
    fake = FlakyNotifications()
    with _serve(fake) as url:
        seen: list[str] = []

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                seen.append(str(message.params.uri))

        params = StdioServerParameters(
            command=str(FORECOURT),
            args=["mcp", "--stdio", "--url", url],
            env={"FORECOURT_MCP_TOKEN": "fck_desktop_" + "k" * 40},
            cwd=tmp_path,
        )
        async with Client(params, mode="legacy", message_handler=on_message):
            await wait_for(lambda: seen == [URI], 30.0)
    assert fake.gets >= 2
