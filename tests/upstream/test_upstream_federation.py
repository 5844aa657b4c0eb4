"""A real upstream MCP server federated behind the gateway's /mcp, end to end over loopback."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client
from upstream_server import LONG_TOOL
from upstream_support import FED_KEY, MOTOR, LiveServer, UpstreamProcess, mcp_client, wait_for

from forecourt.adapters.upstream import tool_name


async def _register(live: LiveServer, keys: dict[str, str], url: str, **extra: Any) -> dict[str, Any]:
    body = {"url": url, "mode": "legacy", **extra}
    response = await live.admin("PUT", "/upstreams/up", keys["admin"], body)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _tools(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


async def _listed(live: LiveServer, keys: dict[str, str], name: str) -> bool:
    hc, client = mcp_client(live.url, keys[FED_KEY])
    async with hc, client:
        return name in await _tools(client)


async def test_upstream_tools_are_listed_under_the_namespace_for_the_owning_company_only(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _register(live, keys, upstream.url)
    await wait_for(lambda: _listed(live, keys, "up.echo"))
    hc, client = mcp_client(live.url, keys[FED_KEY])
    async with hc, client:
        names = await _tools(client)
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"up.echo", "up.add", "up.fail", "workflow.run"} <= names
    assert all(len(n) <= 64 for n in names)
    long_name = tool_name("up", LONG_TOOL)
    assert long_name in names
    assert len(long_name) <= 64
    assert tools["up.add"].output_schema == {
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
    }
    assert not any(":" in n for n in names)
    hc, client = mcp_client(live.url, keys["bay"])
    async with hc, client:
        assert not any(n.startswith("up.") for n in await _tools(client))
        result = await client.call_tool("up.echo", {"text": "hi"})
    assert result.is_error


async def test_an_upstream_call_goes_through_the_pipeline_and_reuses_one_session(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _register(live, keys, upstream.url)
    await wait_for(lambda: _listed(live, keys, "up.echo"))
    hc, client = mcp_client(live.url, keys["crm"])
    async with hc, client:
        echoed = await client.call_tool("up.echo", {"text": "hello"})
        added = await client.call_tool("up.add", {"a": 2, "b": 3})
        failed = await client.call_tool("up.fail", {})
        invalid = await client.call_tool("up.add", {"a": "two"})
        sessions = await client.call_tool("up.sessions", {})
    assert echoed.content[0].text == "hello"
    assert not echoed.is_error
    assert added.structured_content == {"sum": 5}
    assert failed.is_error
    assert failed.content[0].text == "this tool always fails"
    assert invalid.is_error
    assert json.loads(invalid.content[0].text)["error"]["code"] == "invalid_params"
    assert sessions.content[0].text == "1"

    async def audited() -> bool:
        response = await live.admin("GET", "/audit", keys["admin"])
        actions = [r["action"] for r in response.json()["items"]]
        return "up.echo" in actions and "up.add" in actions

    await wait_for(audited)


async def test_company_policy_can_deny_an_upstream_tool(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _register(live, keys, upstream.url)
    await wait_for(lambda: _listed(live, keys, "up.echo"))
    policy = {"name": "no upstream echo", "denied_actions": ["up.echo"]}
    response = await live.admin("PUT", "/policies/deny-echo", keys["admin"], policy)
    assert response.status_code == 200, response.text
    hc, client = mcp_client(live.url, keys[FED_KEY])
    async with hc, client:
        result = await client.call_tool("up.echo", {"text": "hi"})
        assert "up.echo" not in await _tools(client)
    assert result.is_error


async def test_the_tool_list_refreshes_when_the_upstream_announces_a_change(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _register(live, keys, upstream.url)
    await wait_for(lambda: _listed(live, keys, "up.echo"))
    hc, client = mcp_client(live.url, keys["crm"])
    async with hc, client:
        grown = await client.call_tool("up.grow", {})
    assert grown.content[0].text == "extra_1"
    # A new tool is pinned: held until the company's admin approves it (docs/security.md), then listed.
    await wait_for(lambda: "extra_1" in live.hub.pinning.held.get(f"{MOTOR}/up", ()))
    assert not await _listed(live, keys, "up.extra_1")
    approved = await live.admin("POST", "/upstreams/up/tool-changes/approve", keys["admin"], {})
    assert approved.status_code == 200
    await wait_for(lambda: _listed(live, keys, "up.extra_1"))


async def test_a_dead_upstream_gives_a_structured_error_and_is_reconnected_after_restart(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _register(live, keys, upstream.url)
    await wait_for(lambda: _listed(live, keys, "up.echo"))
    upstream.kill()
    hc, client = mcp_client(live.url, keys["crm"])
    async with hc, client:
        result = await client.call_tool("up.echo", {"text": "anyone?"})
    assert result.is_error
    error = json.loads(result.content[0].text)["error"]
    assert error["code"] == "upstream.unavailable"
    assert error["retryable"] is True
    await upstream.start()

    async def answers() -> bool:
        hc, client = mcp_client(live.url, keys["crm"])
        async with hc, client:
            again = await client.call_tool("up.echo", {"text": "back"})
        return not again.is_error and again.content[0].text == "back"

    await wait_for(answers, 20.0)


async def test_upstream_resources_and_prompts_are_federated(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _register(live, keys, upstream.url)
    await wait_for(lambda: _listed(live, keys, "up.echo"))
    hc, client = mcp_client(live.url, keys["crm"])
    async with hc, client:
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        read = await client.read_resource("mem://greeting")
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        prompt = await client.get_prompt("up.greet", {"who": "Sam"})
    assert "mem://greeting" in resources
    assert read.contents[0].text == "hello from upstream"  # type: ignore[union-attr]
    assert "up.greet" in prompts
    assert prompt.messages[0].content.text == "Hi Sam"  # type: ignore[union-attr]


async def test_a_hanging_upstream_tool_times_out_without_breaking_the_shared_session(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _register(live, keys, upstream.url, timeout_s=0.5)
    await wait_for(lambda: _listed(live, keys, "up.echo"))
    hc, client = mcp_client(live.url, keys["crm"])
    async with hc, client:
        hung = await client.call_tool("up.slow", {"seconds": 30})
        after = await client.call_tool("up.echo", {"text": "still here"})
        sessions = await client.call_tool("up.sessions", {})
    assert json.loads(hung.content[0].text)["error"]["code"] == "timeout"
    assert after.content[0].text == "still here"
    assert sessions.content[0].text == "1"


async def test_upstream_progress_notifications_reach_the_caller(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    await _register(live, keys, upstream.url)
    await wait_for(lambda: _listed(live, keys, "up.echo"))
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    hc, client = mcp_client(live.url, keys["crm"])
    async with hc, client:
        result = await client.call_tool("up.progress", {}, progress_callback=on_progress)
    assert result.content[0].text == "progressed"
    assert seen == [(50, 100), (100, 100)]
