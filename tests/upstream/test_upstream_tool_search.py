"""Tool search: a CRM agent whose company federates an upstream of 200 tools sees a core set plus find_tools."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from upstream_support import LiveServer, UpstreamProcess, wait_for

BULK = 200


@pytest.fixture
async def big_upstream() -> AsyncIterator[UpstreamProcess]:
    process = UpstreamProcess(env={"UPSTREAM_BULK_TOOLS": str(BULK)})
    await process.start()
    try:
        yield process
    finally:
        process.kill()


async def _names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


def _client(live: LiveServer, key: str, mode: str, **kwargs: Any) -> tuple[httpx2.AsyncClient, Client]:
    hc = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=60))
    return hc, Client(streamable_http_client(live.url, http_client=hc), mode=mode, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_big_toolset_lists_a_core_set_and_find_tools_loads_matches_with_a_list_changed_notice(
    live: LiveServer, big_upstream: UpstreamProcess, keys: dict[str, str], mode: str
) -> None:
    response = await live.admin("PUT", "/upstreams/up", keys["admin"], {"url": big_upstream.url, "mode": "legacy"})
    assert response.status_code == 200, response.text
    changed: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.append("tools")

    hc, client = _client(live, keys["crm"], mode, message_handler=on_message)
    async with hc, client:

        async def _has_find_tools() -> bool:
            return "find_tools" in await _names(client)

        await wait_for(_has_find_tools, 20.0)
        core = await _names(client)
        assert "inventory.search" in core
        assert not any(n.startswith("up.") for n in core)  # 200+ upstream tools wait behind find_tools
        assert len(core) <= live.settings.mcp_tool_search_threshold + 1

        found = await client.call_tool("find_tools", {"query": "create a new warranty claim", "limit": 3})
        assert not found.is_error
        definitions = found.structured_content["tools"]
        assert definitions[0]["name"] == "up.create_warranty_claim"
        assert all("inputSchema" in d for d in definitions)
        assert "up.create_warranty_claim" not in await _names(client)  # found, not loaded

        loaded = await client.call_tool("find_tools", {"query": "create warranty claim", "limit": 1, "load": True})
        assert not loaded.is_error
        await wait_for(lambda: changed, 10.0)
        assert "up.create_warranty_claim" in await _names(client)
        result = await client.call_tool("up.create_warranty_claim", {"id": "wc-1"})
    assert not result.is_error
    assert result.content[0].text == "create_warranty_claim"
