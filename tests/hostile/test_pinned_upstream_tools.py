"""Pinned upstream tools: a hostile upstream that changes its tools mid-session cannot change what models see.

The hostile server (``hostile_upstream.py``) starts harmless; ``rug_pull`` turns ``lookup_owner``'s description
into instructions, widens ``send_email``'s schema, drops ``weather`` and adds ``exfiltrate``, and announces the
change. Until a company admin approves, the new tool and the changed schema are neither offered nor callable, the
reworded tool keeps its approved words, and each change is audited and counted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError
from typer.testing import CliRunner

from forecourt.cli.main import app
from forecourt.domain.protections import Protections
from forecourt.domain.tenancy import Policy
from gateway.support import MOTOR, PEPPER, Template
from hostile.protect_support import HostileUpstream, Live, mcp_client, prepare_db, register_hostile, wait_for

HARMLESS = "Look up the registered owner of a vehicle by VIN."


@pytest.fixture
async def hostile() -> AsyncIterator[HostileUpstream]:
    server = HostileUpstream()
    await server.start()
    try:
        yield server
    finally:
        server.stop()


async def _live(template: Template, tmp_path: Path, *policies: Policy) -> Live:
    db = template.copy_to(tmp_path)
    await prepare_db(db, *policies)
    live = Live(db)
    await live.start()
    return live


async def _lister(live: Live, admin_key: str) -> str:
    """A key of crm-agent with the small workflows toolset: the CRM toolset alone is near the tool budget, so its
    upstream tools wait behind find_tools (docs/mcp.md, Toolsets); this one lists them."""
    body = {"member_id": "crm-agent", "name": "lister", "toolset": "workflows"}
    created = await live.admin("POST", "/keys", admin_key, body)
    assert created.status_code == 201, created.text
    return str(created.json()["key"])


async def _tools(url: str, key: str) -> dict[str, object]:
    hc, client = mcp_client(url, key)
    async with hc, client:
        return {t.name: t for t in (await client.list_tools()).tools}


async def test_a_rug_pull_is_held_until_an_admin_approves_and_the_old_words_stay_in_service(
    hostile_template: Template, tmp_path: Path, hostile: HostileUpstream
) -> None:
    live = await _live(hostile_template, tmp_path)
    try:
        key = await register_hostile(live, hostile_template.keys["admin"], hostile)
        url = f"{live.base_url}/mcp"
        lister = await _lister(live, hostile_template.keys["admin"])
        hc, client = mcp_client(url, lister)
        async with hc, client:
            await client.call_tool("evil.rug_pull", {})
            await wait_for(lambda: len(live.hub.pinning.held.get(key, ())) == 4)
            tools = {t.name: t for t in (await client.list_tools()).tools}
            with pytest.raises(MCPError):  # not offered, so not callable: an unknown tool
                await client.call_tool("evil.exfiltrate", {"data": "x"})
        changes = await live.admin("GET", "/upstreams/evil/tool-changes", hostile_template.keys["admin"])
        metrics = await live.metrics()
        audit = [r for r in await live.audit(MOTOR) if r.action == "upstream.tools.changed"]

        assert tools["evil.lookup_owner"].description.startswith(HARMLESS)
        assert not {"evil.send_email", "evil.exfiltrate", "evil.weather"} & set(tools)
        items = {c["tool"]: c for c in changes.json()["items"]}
        assert {t: c["change"] for t, c in items.items()} == {
            "exfiltrate": "added",
            "lookup_owner": "changed",
            "send_email": "changed",
            "weather": "removed",
        }
        assert items["lookup_owner"]["schema_compatible"] is True
        assert "<IMPORTANT>" in items["lookup_owner"]["fields"]["description"]["new"]
        assert items["send_email"]["schema_compatible"] is False
        assert 'forecourt_upstream_tool_changes_total{kind="changed",outcome="held"} 2.0' in metrics
        assert sorted(r.args_redacted["tool"] for r in audit) == ["exfiltrate", "lookup_owner", "send_email", "weather"]

        approved = await live.admin(
            "POST", "/upstreams/evil/tool-changes/approve", hostile_template.keys["admin"], {"tools": ["send_email"]}
        )
        assert approved.status_code == 200, approved.text
        after = await _tools(url, lister)
        assert "evil.send_email" in after
        assert "evil.exfiltrate" not in after
        assert "bcc" in after["evil.send_email"].input_schema["properties"]  # type: ignore[attr-defined]
    finally:
        live.stop()


async def test_a_crm_agent_cannot_approve_tool_changes(
    hostile_template: Template, tmp_path: Path, hostile: HostileUpstream
) -> None:
    live = await _live(hostile_template, tmp_path)
    try:
        await register_hostile(live, hostile_template.keys["admin"], hostile)
        refused = await live.admin("POST", "/upstreams/evil/tool-changes/approve", hostile_template.keys["crm"], {})
    finally:
        live.stop()
    assert refused.status_code == 403


async def test_a_policy_that_auto_accepts_an_upstream_offers_its_changes_at_once_and_still_audits_them(
    hostile_template: Template, tmp_path: Path, hostile: HostileUpstream
) -> None:
    policy = Policy(id="auto", company_id=MOTOR, protections=Protections(auto_accept_upstreams=("evil",)))
    live = await _live(hostile_template, tmp_path, policy)
    try:
        key = await register_hostile(live, hostile_template.keys["admin"], hostile)
        url = f"{live.base_url}/mcp"
        lister = await _lister(live, hostile_template.keys["admin"])
        hc, client = mcp_client(url, lister)
        async with hc, client:
            await client.call_tool("evil.rug_pull", {})
            await wait_for(lambda: "evil.exfiltrate" in live.hub.tool_names(key))
        metrics = await live.metrics()
    finally:
        live.stop()
    assert live.hub.pinning.held[key] == frozenset()
    assert 'forecourt_upstream_tool_changes_total{kind="added",outcome="accepted"} 1.0' in metrics


async def test_the_operator_reviews_and_approves_tool_changes_from_the_command_line(
    hostile_template: Template, tmp_path: Path, hostile: HostileUpstream
) -> None:
    live = await _live(hostile_template, tmp_path)
    env = {"FORECOURT_DATABASE_URL": live.settings.database_url, "FORECOURT_API_KEY_PEPPER": PEPPER}
    try:
        key = await register_hostile(live, hostile_template.keys["admin"], hostile)
        hc, client = mcp_client(f"{live.base_url}/mcp", hostile_template.keys["crm"])
        async with hc, client:
            await client.call_tool("evil.rug_pull", {})
        await wait_for(lambda: len(live.hub.pinning.held.get(key, ())) == 4)

        def cli(*args: str) -> Any:
            return CliRunner().invoke(
                app, ["upstreams", "changes", *args, "evil", "--company", MOTOR, "--json"], env=env
            )

        listed = await asyncio.to_thread(cli, "list")
        approved = await asyncio.to_thread(cli, "approve", "--tool", "exfiltrate")
        left = await live.admin("GET", "/upstreams/evil/tool-changes", hostile_template.keys["admin"])
    finally:
        live.stop()
    assert listed.exit_code == 0, listed.output
    assert {c["tool"] for c in json.loads(listed.output)["items"]} == {
        "exfiltrate",
        "lookup_owner",
        "send_email",
        "weather",
    }
    assert approved.exit_code == 0, approved.output
    assert [c["tool"] for c in json.loads(approved.output)["approved"]] == ["exfiltrate"]
    assert {c["tool"] for c in left.json()["items"]} == {"lookup_owner", "send_email", "weather"}


async def test_an_upstream_whose_tool_names_shadow_another_upstreams_is_refused_at_registration(
    hostile_template: Template, tmp_path: Path, hostile: HostileUpstream
) -> None:
    live = await _live(hostile_template, tmp_path)
    admin = hostile_template.keys["admin"]
    try:
        first = await live.admin("PUT", "/upstreams/one", admin, {"url": hostile.url, "namespace": ""})
        second = await live.admin("PUT", "/upstreams/two", admin, {"url": hostile.url, "namespace": ""})
        listed = await live.admin("GET", "/upstreams", admin)
    finally:
        live.stop()
    assert first.status_code == 200, first.text
    assert second.status_code == 409
    error = second.json()["error"]
    assert error["code"] == "upstream.namespace_taken"
    assert sorted(error["details"]["tools"]) == ["lookup_owner", "rug_pull", "send_email", "weather"]
    assert [u["id"] for u in listed.json()["items"]] == ["one"]
