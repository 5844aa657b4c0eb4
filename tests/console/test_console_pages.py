"""Console pages beyond tenants: tools per member, upstream MCP servers, policy validation, overview fragment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from console.conftest import csrf_of, sign_in
from gateway.support import MOTOR, Rig, Template, start_rig, stop_rig


def _client(rig: Rig) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test")


async def test_tools_page_lists_what_a_member_sees_over_mcp_with_token_sizes(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        shopper = await client.get("/console/tools", params={"member_id": "shopper-agent"})
        crm = await client.get("/console/tools", params={"member_id": "crm-agent"})
    assert shopper.status_code == 200
    assert "aap_inventory_search" in shopper.text
    assert "leads.update" not in shopper.text
    assert "leads.update" in crm.text
    assert "admin.keys.create" not in crm.text
    assert "tokens in <code>tools/list</code>" in crm.text
    # Exactly the member's tools/list: the CRM toolset leaves out the model runtimes the gateway would allow it,
    # and the sizes come from a real tokenizer.
    assert "vertex.invokeModel" not in crm.text
    assert "find_tools" not in crm.text
    assert "(cl100k_base)" in crm.text
    assert "<strong>20</strong> tools" in crm.text


async def test_policy_validation_errors_are_shown_and_nothing_is_saved(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        page = await client.get("/console/policies")
        bad_rule = [{"action": "leads.update", "op": "sometimes"}]
        response = await client.post(
            "/console/policies",
            data={
                "csrf": csrf_of(page.text),
                "id": f"{MOTOR}-default",
                "require_approval": str(bad_rule).replace("'", '"'),
                "intent": "save",
            },
        )
        assert response.status_code == 422
        assert "invalid_params" in response.text
        limits = await client.post(
            "/console/policies",
            data={"csrf": csrf_of(page.text), "id": f"{MOTOR}-default", "rate_limits": "member=lots", "intent": "save"},
        )
        assert limits.status_code == 422
    assert not [r for r in await rig.audit(MOTOR) if r.action == "admin.policies.upsert"]


async def test_overview_fragment_is_a_panel_with_an_svg_chart(rig: Rig) -> None:
    await rig.call("inventory.search", {"dealership_id": "demo-toyota-sf", "limit": 1})
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        assert await rig.services.audit.flush()
        panel = await client.get("/console/fragments/overview")
    assert panel.status_code == 200
    assert "<html" not in panel.text
    assert "<svg" in panel.text
    assert "crm-agent" in panel.text


async def _upstream_rig(template: Template, tmp_path: Path) -> Rig:
    return await start_rig(template, tmp_path, allow_private_targets=True)


async def test_upstreams_can_be_added_tested_disabled_and_removed(console_template: Template, tmp_path: Path) -> None:
    rig = await _upstream_rig(console_template, tmp_path)
    try:
        async with _client(rig) as client:
            csrf = await sign_in(client, rig.keys["admin"])
            form: dict[str, Any] = {"csrf": csrf, "id": "parts", "url": "http://127.0.0.1:9/mcp", "description": "x"}
            added = await client.post("/console/upstreams", data=form)
            assert added.status_code == 303, added.text
            tested = await client.post("/console/upstreams/parts/test", data={"csrf": csrf})
            assert tested.status_code == 303
            page = await client.get("/console/upstreams")
            assert "Test of parts: not connected" in page.text
            await client.post("/console/upstreams/parts/toggle", data={"csrf": csrf})
            assert "disabled" in (await client.get("/console/upstreams")).text
            await client.post("/console/upstreams/parts/delete", data={"csrf": csrf})
            assert "No upstream servers." in (await client.get("/console/upstreams")).text
        actions = [r.action for r in await rig.audit(MOTOR) if r.surface == "console" and "upstreams" in r.action]
        assert actions.count("admin.upstreams.upsert") == 1
        assert actions.count("admin.upstreams.set_enabled") == 1
        assert actions.count("admin.upstreams.delete") == 1
    finally:
        await stop_rig(rig)
