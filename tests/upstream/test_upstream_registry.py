"""Registering upstream servers: SSRF refusal, operator-only stdio, namespaces, tool names; a stdio upstream."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from upstream_server import LONG_TOOL
from upstream_support import FED_KEY, SERVER_SCRIPT, LiveServer, copy_template, mcp_client, wait_for

from conftest import Template
from forecourt.adapters.upstream import UpstreamSession, UpstreamSpec, tool_name
from forecourt.domain.upstreams import TOOL_NAME, Registered
from forecourt.errors import UnsafeTarget
from forecourt.settings import Settings
from forecourt.store import open_store_url

MOTOR = "demo-motor-group"


def test_tool_names_fit_64_characters_and_stay_distinct_and_stable() -> None:
    short = tool_name("crm", "create_issue")
    long_a = tool_name("a-rather-long-namespace", LONG_TOOL)
    long_b = tool_name("a-rather-long-namespace", LONG_TOOL + "x")
    odd = tool_name("crm", "send email/now")
    assert short == "crm.create_issue"
    assert all(TOOL_NAME.fullmatch(n) for n in (short, long_a, long_b, odd))
    assert len(long_a) == 64
    assert long_a != long_b
    assert long_a == tool_name("a-rather-long-namespace", LONG_TOOL)
    assert odd.startswith("crm.send_email_now-")
    assert tool_name("", "get-sum") == "get-sum"


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9/mcp", "http://localhost:9/mcp", "http://169.254.169.254/latest", "http://[::1]:9/mcp"],
)
async def test_a_private_or_loopback_upstream_url_is_refused_unless_the_operator_allows_it(
    upstream_template: Template, tmp_path: Path, url: str
) -> None:
    live = LiveServer(copy_template(upstream_template.path, tmp_path), allow_private_targets=False)
    await live.start()
    try:
        response = await live.admin("PUT", "/upstreams/up", upstream_template.keys["admin"], {"url": url})
    finally:
        live.stop()
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "net.unsafe_target"


async def test_a_session_refuses_to_connect_to_a_private_address_when_private_targets_are_off() -> None:
    spec = UpstreamSpec(id="up", url="http://127.0.0.1:9/mcp")
    registered = Registered(MOTOR, spec, operator_managed=False, updated_at=datetime.now(UTC))
    session = UpstreamSession(registered, settings=Settings(allow_private_targets=False))
    with pytest.raises(UnsafeTarget):
        await session.client()
    assert session.last_error == "net.unsafe_target"


async def test_company_admins_cannot_register_stdio_commands_or_squat_namespaces(
    live: LiveServer, keys: dict[str, str]
) -> None:
    stdio = {"transport": "stdio", "command": sys.executable, "args": ["-c", "print(1)"]}
    refused = await live.admin("PUT", "/upstreams/local", keys["admin"], stdio)
    squat = await live.admin(
        "PUT", "/upstreams/inv", keys["admin"], {"url": "http://127.0.0.1:9/mcp", "namespace": "inventory"}
    )
    reserved = await live.admin(
        "PUT", "/upstreams/x", keys["admin"], {"url": "http://127.0.0.1:9/mcp", "namespace": "aap"}
    )
    missing = await live.admin("DELETE", "/upstreams/nope", keys["admin"])
    not_admin = await live.admin("GET", "/upstreams", keys["crm"])
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "auth.forbidden"
    assert squat.status_code == 409
    assert squat.json()["error"]["code"] == "upstream.namespace_taken"
    assert reserved.status_code == 422
    assert reserved.json()["error"]["code"] == "upstream.invalid_definition"
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "upstream.not_found"
    assert not_admin.status_code == 403


async def test_an_operator_registered_stdio_upstream_serves_its_tools(
    upstream_template: Template, tmp_path: Path
) -> None:
    db = copy_template(upstream_template.path, tmp_path)
    store = open_store_url(f"sqlite+aiosqlite:///{db}")
    spec = UpstreamSpec(id="local", transport="stdio", command=sys.executable, args=(str(SERVER_SCRIPT), "stdio"))
    try:
        async with store.transaction() as uow:
            await uow.upstreams.upsert(MOTOR, spec, operator=True, now=datetime.now(UTC))
    finally:
        await store.close()
    live = LiveServer(db)
    await live.start()
    try:

        async def listed() -> bool:
            hc, client = mcp_client(live.url, upstream_template.keys[FED_KEY])
            async with hc, client:
                return "local.echo" in {t.name for t in (await client.list_tools()).tools}

        await wait_for(listed, 20.0)
        logs: list[Any] = []

        async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            raise AssertionError("a stdio upstream's request cannot be attributed to a call, so it is never relayed")

        async def logging(params: types.LoggingMessageNotificationParams) -> None:
            logs.append(params.data)

        hc, client = mcp_client(
            live.url, upstream_template.keys["crm"], sampling_callback=sampling, logging_callback=logging
        )
        async with hc, client:
            first = await client.call_tool("local.echo", {"text": "over stdio"})
            sampled = await client.call_tool("local.sample", {"prompt": "?"})
            logged = await client.call_tool("local.log", {"tag": "x"})
            count = await client.call_tool("local.sessions", {})
        listing = await live.admin("GET", "/upstreams", upstream_template.keys["admin"])
    finally:
        live.stop()
    assert first.content[0].text == "over stdio"
    assert sampled.content[0].text == f"refused {types.METHOD_NOT_FOUND}"  # a pipe carries no correlation
    assert logged.content[0].text == "logged"
    assert logs == []
    assert count.content[0].text == "1"
    item = listing.json()["items"][0]
    assert item["operator_managed"] is True
    assert item["status"]["connected"] is True
