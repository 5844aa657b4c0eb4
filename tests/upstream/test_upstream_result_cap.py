"""Upstream tool results over ``FORECOURT_MCP_MAX_RESULT_BYTES`` are refused with ``mcp.result_too_large``.

The cap holds on every front door that can call an upstream tool: MCP in both protocol eras, the gateway agent
over A2A, and the REST envelope. A real upstream server answers ``echo`` with the text it was given.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import httpx2
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part
from a2a.types import Message, Role, SendMessageRequest, TaskState
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from upstream_support import LiveServer, UpstreamProcess, copy_template, mcp_client, wait_for

from conftest import Template

CAP = 20_000
BIG = "x" * 30_000


@pytest.fixture
async def capped(upstream_template: Template, tmp_path: Path) -> AsyncIterator[LiveServer]:
    server = LiveServer(copy_template(upstream_template.path, tmp_path), mcp_max_result_bytes=CAP)
    await server.start()
    try:
        yield server
    finally:
        server.stop()


async def _registered(live: LiveServer, keys: dict[str, str], upstream: UpstreamProcess) -> None:
    response = await live.admin("PUT", "/upstreams/up", keys["admin"], {"url": upstream.url, "mode": "legacy"})
    assert response.status_code == 200, response.text

    await wait_for(lambda: "up.echo" in live.hub.tool_names("demo-motor-group/up"))


def _error_code(result: Any) -> str:
    assert result.is_error
    return str(json.loads(result.content[0].text)["error"]["code"])


async def test_an_upstream_result_over_the_cap_is_refused_over_mcp_in_both_eras(
    capped: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _registered(capped, keys, upstream)
    hc, legacy = mcp_client(capped.url, keys["crm"])
    async with hc, legacy:
        big = await legacy.call_tool("up.echo", {"text": BIG})
        small = await legacy.call_tool("up.echo", {"text": "fits"})
    assert _error_code(big) == "mcp.result_too_large"
    assert json.loads(big.content[0].text)["error"]["details"]["max_bytes"] == CAP
    assert not small.is_error
    assert "fits" in small.content[0].text  # (upstream text may be marked as untrusted around it)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {keys['crm']}"}, timeout=30) as hc2:
        modern = Client(streamable_http_client(capped.url, http_client=hc2), mode="2026-07-28")  # type: ignore[arg-type]
        async with modern:
            refused = await modern.call_tool("up.echo", {"text": BIG})
    assert _error_code(refused) == "mcp.result_too_large"


async def test_an_upstream_result_over_the_cap_is_refused_through_the_rest_envelope(
    capped: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _registered(capped, keys, upstream)
    async with httpx.AsyncClient(base_url=capped.base_url, timeout=30) as http:
        response = await http.post(
            "/mcp/up.echo",
            json={"id": "req-1", "payload": {"text": BIG}},
            headers={"Authorization": f"Bearer {keys['crm']}"},
        )
    assert response.status_code == 413, response.text
    assert response.json()["status"]["error"]["code"] == "mcp.result_too_large"


async def test_an_upstream_result_over_the_cap_fails_the_a2a_task_with_that_code(
    capped: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _registered(capped, keys, upstream)
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {keys['crm']}"}, timeout=30) as http:
        config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"])
        client = await ClientFactory(config).create_from_url(capped.base_url + "/agent")
        message = Message(
            message_id=uuid4().hex,
            role=Role.ROLE_USER,
            parts=[new_data_part({"action": "up.echo", "payload": {"text": BIG}}, media_type="application/json")],
        )
        try:
            events = [e async for e in client.send_message(SendMessageRequest(message=message))]
        finally:
            await client.close()
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks
    task = tasks[-1]
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert get_data_parts(list(task.status.message.parts))[0]["error"]["code"] == "mcp.result_too_large"
