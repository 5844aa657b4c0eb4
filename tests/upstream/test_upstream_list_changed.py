"""``tools.listChanged``: declared, and announced to a company's sessions when its upstreams change the list.

A real upstream server is registered for demo-motor-group while MCP clients are connected; their tool lists
now hold its tools, so each must be told (legacy: on its ``GET`` stream; 2026-07-28: on a ``subscriptions/listen``
stream that asked for ``toolsListChanged``), and a member of another company must not be.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from upstream_support import FED_KEY, LiveServer, UpstreamProcess, mcp_client, wait_for


async def _register(live: LiveServer, keys: dict[str, str], upstream: UpstreamProcess) -> None:
    response = await live.admin("PUT", "/upstreams/up", keys["admin"], {"url": upstream.url, "mode": "legacy"})
    assert response.status_code == 200, response.text


def _modern(url: str, key: str) -> tuple[httpx2.AsyncClient, Client]:
    hc = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=60))
    return hc, Client(streamable_http_client(url, http_client=hc), mode="2026-07-28")  # type: ignore[arg-type]


async def test_a_legacy_session_declares_list_changed_and_hears_an_upstream_change(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    heard: list[str] = []
    stranger_heard: list[str] = []

    def recorder(into: list[str]) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                into.append("tools")

        return on_message

    hc, client = mcp_client(live.url, keys[FED_KEY], message_handler=recorder(heard))
    other_hc, other = mcp_client(live.url, keys["bay"], message_handler=recorder(stranger_heard))
    async with hc, client, other_hc, other:
        tools = client.server_capabilities.tools
        assert tools is not None
        assert tools.list_changed is True
        # Each session's GET stream is open once the surface has registered it.
        surface = next(r.app.surface for r in live.app.routes if getattr(r, "path", None) == "/mcp")
        await wait_for(lambda: surface.tool_changes.watching("demo-motor-group") == 1)
        await wait_for(lambda: surface.tool_changes.watching("demo-bay-autos") == 1)
        await _register(live, keys, upstream)
        await wait_for(lambda: bool(heard))
        names = {t.name for t in (await client.list_tools()).tools}
        assert "up.echo" in names
    assert stranger_heard == []


async def test_a_listen_stream_hears_an_upstream_change_of_its_company(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    hc, client = _modern(live.url, keys[FED_KEY])
    async with hc, client:
        async with client.listen(tools_list_changed=True) as sub:
            assert sub.honored.tools_list_changed is True
            await _register(live, keys, upstream)
            with anyio.fail_after(20):
                async for event in sub:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
        assert "up.echo" in {t.name for t in (await client.list_tools()).tools}


async def test_an_unknown_tool_in_the_2026_era_is_a_clear_error_naming_it(
    live: LiveServer, keys: dict[str, str]
) -> None:
    from mcp import MCPError

    hc, client = _modern(live.url, keys["crm"])
    async with hc, client:
        try:
            await client.call_tool("no.such_tool", {})
        except MCPError as exc:
            error = exc.error
        else:
            raise AssertionError("an unknown tool must be a JSON-RPC error")
    assert error.code == -32602
    assert "no.such_tool" in error.message
    assert error.data["code"] == "action.unknown"
    assert error.data["details"] == {"tool": "no.such_tool"}


async def test_a_stdio_session_hears_an_upstream_change_of_its_company(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    import sys
    from pathlib import Path

    from mcp import StdioServerParameters
    from upstream_support import PEPPER

    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.append("tools")

    env = {
        "FORECOURT_DATABASE_URL": live.settings.database_url,
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_MCP_TOKEN": keys[FED_KEY],
        "FORECOURT_ALLOW_PRIVATE_TARGETS": "true",
        "FORECOURT_UPSTREAM_SYNC_INTERVAL_S": "0.2",
        "FORECOURT_LOG_LEVEL": "WARNING",
    }
    command = str(Path(sys.executable).parent / "forecourt")
    params = StdioServerParameters(command=command, args=["mcp", "--stdio"], env=env)
    async with Client(params, mode="legacy", message_handler=on_message) as client:  # type: ignore[arg-type]
        tools = client.server_capabilities.tools
        assert tools is not None
        assert tools.list_changed is True
        await _register(live, keys, upstream)
        await wait_for(lambda: bool(heard), 20.0)
        assert "up.echo" in {t.name for t in (await client.list_tools()).tools}
