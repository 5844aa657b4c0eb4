"""Tools over Streamable HTTP, driven by the SDK's own client in both protocol eras."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError
from mcp_support import HONDA, TOYOTA, LiveServer, error_of, http_client, mcp_client

ERAS = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]


async def _all_tools(client: Any) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


def _first_id(result: types.CallToolResult) -> str | None:
    items = (result.structured_content or {}).get("items") or []
    return str(items[0]["id"]) if items else None


async def _arguments(client: Any) -> dict[str, dict[str, Any]]:
    """Valid arguments for the dealer tools (ids found through the list tools); others get only the dealership."""
    d = {"dealership_id": TOYOTA}
    args: dict[str, dict[str, Any]] = {
        "inventory.search": {**d, "limit": 3},
        "inventory.facets": d,
        "dealer.information": d,
        "leads.list": {**d, "limit": 2},
        "customers.list": {**d, "limit": 2},
        "consent.list": {**d, "limit": 2},
        "service.list_repair_orders": {**d, "limit": 2},
        "service.list_appointments": {**d, "from": "2026-01-01T00:00:00Z", "to": "2026-04-01T00:00:00Z"},
        "events.list": {**d, "limit": 3},
        "aap_dealer_information": d,  # the AAP payload without its constant type (the server adds it)
    }
    for list_tool, get_tool, field in (
        ("inventory.search", "inventory.get", "vehicle_id"),
        ("leads.list", "leads.get", "lead_id"),
        ("customers.list", "customers.get", "customer_id"),
        ("service.list_repair_orders", "service.get_repair_order", "repair_order_id"),
        ("service.list_appointments", "service.get_appointment", "appointment_id"),
    ):
        found = _first_id(await client.call_tool(list_tool, args[list_tool]))
        assert found, list_tool
        args[get_tool] = {**d, field: found}
    return args


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_every_allowed_tool_is_listed_and_callable_in_both_eras(
    live: LiveServer, keys: dict[str, str], mode: str, version: str
) -> None:
    async with http_client(keys["all"]) as hc, mcp_client(live.url, hc, mode) as client:
        assert client.protocol_version == version
        tools = await _all_tools(client)
        names = {t.name for t in tools}
        assert {"inventory.search", "inventory.get", "leads.create", "deals.request_trade_value"} <= names
        assert {"service.book_appointment", "events.list", "service.get_appointment"} <= names
        assert not any(n.startswith("admin.") for n in names)
        aap = {n for n in names if n.startswith("aap")}
        catalogue = live.services.catalogue.all()
        expected_aap = {a.name.replace(".", "_") for a in catalogue if a.name.startswith("aap.") and not a.public}
        assert aap == expected_aap
        args = await _arguments(client)
        for tool in tools:
            result = await client.call_tool(tool.name, args.get(tool.name, {"dealership_id": TOYOTA}))
            if tool.name in args:
                assert not result.is_error, (tool.name, result.structured_content)
                assert result.structured_content is not None
            else:
                # Tools needing runtimes or more arguments still answer with a structured error, never a fault.
                assert result.content, tool.name
                if result.is_error:
                    assert isinstance(error_of(result)["code"], str), tool.name


async def test_tools_list_shows_only_what_the_credential_may_call(live: LiveServer, keys: dict[str, str]) -> None:
    async with http_client(keys["crm_read"]) as hc, mcp_client(live.url, hc, "auto") as client:
        names = {t.name for t in await _all_tools(client)}
    assert "inventory.search" in names
    assert "leads.get" in names
    assert "leads.create" not in names  # a read scope never permits a mutating tool
    assert "service.book_appointment" not in names
    assert "deals.request_trade_value" not in names


async def test_tool_definitions_carry_schemas_annotations_and_descriptions(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "legacy") as client:
        tools = {t.name: t for t in await _all_tools(client)}
    search = tools["inventory.search"]
    assert search.input_schema["type"] == "object"
    assert "limit" in search.input_schema["properties"]
    assert search.output_schema is not None
    assert search.output_schema["properties"]["items"]["type"] == "array"
    assert search.annotations is not None
    assert search.annotations.read_only_hint is True
    assert search.annotations.open_world_hint is False
    assert "Example: {" in (search.description or "")
    assert "view" in search.input_schema["properties"]
    create = tools["leads.create"]
    assert create.annotations is not None
    assert create.annotations.read_only_hint is False
    assert create.annotations.idempotent_hint is False
    assert tools["consent.update"].annotations is not None
    assert tools["consent.update"].annotations.destructive_hint is True
    get = tools["inventory.get"]
    assert "oneOf" not in get.input_schema  # folded into the description for hosts that refuse it
    assert "exactly one of" in (get.description or "")
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.description
        assert "$ref" not in json.dumps(tool.input_schema)
        assert "seed 001" not in (tool.description or "")


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_errors_are_structured_tool_results_with_stable_codes(
    live: LiveServer, keys: dict[str, str], mode: str, version: str
) -> None:
    async with (
        http_client(keys["crm"]) as hc,
        http_client(keys["crm_read"]) as hc_read,
        mcp_client(live.url, hc, mode) as client,
        mcp_client(live.url, hc_read, mode) as reader,
    ):
        wrong = await client.call_tool("inventory.search", {"dealership_id": "demo-bay-sj"})
        unknown = await client.call_tool("inventory.search", {"dealership_id": "no-such-dealer"})
        bad = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": "many"})
        extra = await client.call_tool("leads.get", {"dealership_id": HONDA})
        scope = await reader.call_tool(
            "leads.create", {"dealership_id": TOYOTA, "customer": {"first_name": "Ann", "email": "ann@example.com"}}
        )
        missing = await client.call_tool("leads.get", {"dealership_id": TOYOTA, "lead_id": "lead_nope"})
    for result, code in (
        (wrong, "auth.tenancy_denied"),
        (unknown, "auth.tenancy_denied"),
        (bad, "invalid_params"),
        (extra, "invalid_params"),
        (scope, "auth.insufficient_scope"),
        (missing, "leads.lead_not_found"),
    ):
        assert result.is_error, code
        error = error_of(result)
        assert error["code"] == code
        assert isinstance(error["message"], str)
        assert isinstance(error["retryable"], bool)
        assert code in result.content[0].text
    assert error_of(scope)["details"]["required_scope"] == "amcp:leads:write"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_unknown_tool_is_a_protocol_error(live: LiveServer, keys: dict[str, str], mode: str) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("admin.keys.create", {})
    assert caught.value.code == types.INVALID_PARAMS


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_unexpected_failure_never_leaks_its_text(live: LiveServer, keys: dict[str, str], mode: str) -> None:
    surface = live.surface

    def explode(name: str) -> Any:
        raise RuntimeError("SELECT secret FROM internals")

    surface.toolset.action_for = explode
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("inventory.search", {"dealership_id": TOYOTA})
    assert caught.value.code == types.INTERNAL_ERROR
    assert "secret" not in caught.value.message
    assert "secret" not in str(caught.value.error.data)


async def test_large_results_are_paged_and_capped(live: LiveServer, keys: dict[str, str]) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "auto") as client:
        first = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": 5})
        assert first.structured_content is not None
        assert len(first.structured_content["items"]) == 5
        assert first.structured_content["total"] > 5
        nxt = await client.call_tool(
            "inventory.search", {"dealership_id": TOYOTA, "limit": 5, "cursor": first.structured_content["next_cursor"]}
        )
        assert nxt.structured_content is not None
        assert {v["id"] for v in nxt.structured_content["items"]}.isdisjoint(
            {v["id"] for v in first.structured_content["items"]}
        )
        live.surface.max_result_bytes = 2_000
        big = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": 30})
        rest = await client.call_tool(
            "inventory.search", {"dealership_id": TOYOTA, "limit": 30, "cursor": big.structured_content["next_cursor"]}
        )
    # Over the size budget: the first page that fits, the gateway's own next_cursor, and a one-line summary.
    assert not big.is_error
    page = big.structured_content
    assert 0 < len(page["items"]) < 30
    assert page["next_cursor"]
    assert big.content[0].text.startswith(f"{len(page['items'])} of {page['total']} vehicles")
    assert not rest.is_error
    assert {v["id"] for v in rest.structured_content["items"]}.isdisjoint({v["id"] for v in page["items"]})


async def test_money_mileage_and_times_follow_the_profile(live: LiveServer, keys: dict[str, str]) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "auto") as client:
        result = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": 1, "view": "full"})
    vehicle = result.structured_content["items"][0]
    assert isinstance(vehicle["price"]["amount_minor"], int)
    assert vehicle["price"]["currency"] == "USD"
    assert vehicle["mileage"]["unit"] in ("mi", "km")
    assert (
        vehicle["updated_at"][-6:] in ("+00:00",) or vehicle["updated_at"].endswith("Z") or "+" in vehicle["updated_at"]
    )


async def test_the_docs_example_passing_one_make_as_a_string_works_like_a_list(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "2026-07-28") as client:
        one = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "make": "Toyota"})
        listed = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "make": ["Toyota"]})
        assert not one.is_error, one.content
        # The cursor carries its expiry (whole seconds), so two calls a second apart differ only there:
        # the pages are the same, and each cursor continues to the same next page.
        first, second = dict(one.structured_content), dict(listed.structured_content)
        cursor_one, cursor_listed = first.pop("next_cursor"), second.pop("next_cursor")
        assert first == second
        after_one = await client.call_tool(
            "inventory.search", {"dealership_id": TOYOTA, "make": "Toyota", "cursor": cursor_one}
        )
        after_listed = await client.call_tool(
            "inventory.search", {"dealership_id": TOYOTA, "make": ["Toyota"], "cursor": cursor_listed}
        )
    assert after_one.structured_content["items"] == after_listed.structured_content["items"]
    assert after_one.structured_content["items"]
