"""Resources (the documented URI scheme), the manifest and prompts, in both protocol eras."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError
from mcp_support import BAY_SJ, HONDA, TOYOTA, LiveServer, http_client, mcp_client


def _expand(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    assert "{" not in template, template
    return template


def _json(result: types.ReadResourceResult) -> Any:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == "application/json"
    return json.loads(content.text)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_every_resource_template_reads_through_the_gateway(
    live: LiveServer, keys: dict[str, str], mode: str
) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, mode) as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert len(templates) == 13
        collections = [t for t in templates if t.uri_template.count("{") == 1 and t.name != "dealership"]
        ids: dict[str, str] = {}
        for template in collections:
            uri = _expand(template.uri_template, {"dealership_id": TOYOTA})
            if template.name == "appointments":
                uri += "?limit=5"
            body = _json(await client.read_resource(uri))
            assert "items" in body, uri
            if body["items"]:
                ids[template.name] = str(body["items"][0]["id"])
        for template in templates:
            if template.name == "dealership":
                assert _json(await client.read_resource(_expand(template.uri_template, {"dealership_id": TOYOTA})))
                continue
            if template.uri_template.count("{") != 2:
                continue
            segment = template.uri_template.split("/")[3]
            if segment not in ids:
                continue
            field = template.uri_template.rsplit("{", 1)[1].rstrip("}")
            uri = _expand(template.uri_template, {"dealership_id": TOYOTA, field: ids[segment]})
            assert _json(await client.read_resource(uri))["id"] == ids[segment]
        assert {"vehicles", "leads", "customers", "repair_orders"} <= set(ids)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_resources_list_pages_with_cursors_to_every_vehicle(
    live: LiveServer, keys: dict[str, str], mode: str
) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, mode) as client:
        uris: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await client.list_resources(cursor=cursor)
            uris.extend(str(r.uri) for r in page.resources)
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break
        with pytest.raises(MCPError) as caught:
            await client.list_resources(cursor="not-a-cursor")
        totals = 0
        for d in (TOYOTA, HONDA):
            totals += (await client.call_tool("inventory.search", {"dealership_id": d, "limit": 1})).structured_content[
                "total"
            ]
    assert caught.value.code == types.INVALID_PARAMS
    assert pages >= 3
    assert uris[0] == "automotive://manifest"
    assert f"automotive://dealers/{TOYOTA}/leads" in uris
    vehicles = [u for u in uris if "/vehicles/" in u]
    assert len(vehicles) == len(set(vehicles)) == totals  # every offered vehicle of the key's two rooftops, once
    assert not any(BAY_SJ in u for u in uris)
    assert any(HONDA in u for u in vehicles)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_reads_refuse_other_dealerships_and_unknown_uris(
    live: LiveServer, keys: dict[str, str], mode: str
) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, mode) as client:
        with pytest.raises(MCPError) as other:
            await client.read_resource(f"automotive://dealers/{BAY_SJ}/leads")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("automotive://dealers/x/spaceships/1")
        with pytest.raises(MCPError) as missing:
            await client.read_resource(f"automotive://dealers/{TOYOTA}/leads/lead_nope")
    assert other.value.code == -32003
    assert other.value.error.data["code"] == "auth.tenancy_denied"
    assert unknown.value.code == -32002
    assert missing.value.code == -32002
    assert missing.value.error.data["code"] == "leads.lead_not_found"


async def test_manifest_is_a_resource_and_a_well_known_document(live: LiveServer, keys: dict[str, str]) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "auto") as client:
        body = _json(await client.read_resource("automotive://manifest"))
        public = (await hc.get(f"{live.base_url}/.well-known/automotive-mcp.json")).json()
    assert body == public
    manifest = body["automotive_mcp"]
    assert manifest["spec_version"] == "0.1"
    assert manifest["server"]["name"] == "Forecourt"
    assert manifest["domains"]["inventory"] == {"level": 3}
    assert manifest["domains"]["leads"] == {"level": 3}
    assert manifest["domains"]["service"] == {"level": 3}
    assert "deals" not in manifest["domains"]  # nothing readable in deals: Level 1 is not met
    assert manifest["auth"]["type"] == "oauth2"
    assert "amcp:leads:write" in manifest["auth"]["scopes"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_prompts_take_arguments_and_name_the_resources(live: LiveServer, keys: dict[str, str], mode: str) -> None:
    async with http_client(keys["crm_toyota"]) as hc, mcp_client(live.url, hc, mode) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(listed) == {
            "follow_up_lead",
            "prepare_trade_in_conversation",
            "summarise_service_lane",
            "follow_up_new_leads",
            "find_suvs_and_book_test_drive",
            "summarise_repair_order",
        }
        follow = await client.get_prompt("follow_up_lead", {"lead_id": "lead_1", "channel": "email"})
        lane = await client.get_prompt("summarise_service_lane", {"date": "2026-03-02"})
        trade = await client.get_prompt("prepare_trade_in_conversation", {"lead_id": "lead_1"})
        with pytest.raises(MCPError) as bad:
            await client.get_prompt("follow_up_lead", {"channel": "fax", "lead_id": "lead_1"})
    text = follow.messages[0].content
    assert isinstance(text, types.TextContent)
    assert f"automotive://dealers/{TOYOTA}/leads/lead_1" in text.text
    assert isinstance(lane.messages[0].content, types.TextContent)
    assert "2026-03-02" in lane.messages[0].content.text
    assert trade.messages
    assert bad.value.code == types.INVALID_PARAMS
