"""The tool surface a model uses: names (canonical and LLM-safe), role toolsets, the token budget, compact
results, AAP payloads without ``type`` — over the official ``mcp`` client in both protocol eras."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import MCPError
from mcp_support import MOTOR, TOYOTA, LiveServer, Template, http_client, mcp_client, settings_for
from pydantic import ValidationError

from forecourt.actions.toolsets import LLM_NAME, llm_name, llm_names
from forecourt.domain.tenancy import Policy
from forecourt.store import open_store_url
from forecourt.surfaces.mcp.tokens import ENCODINGS, count_tokens, list_json, o200k_vocab_file, token_counts
from forecourt.surfaces.mcp.views import VEHICLE, summary

ERAS = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]
CRM_BUDGET_TOKENS = 8_000
# domain.verb_object (AutomotiveMCP), and seed 001's camelCase model actions (vertex.batchPredict.get)
AUTOMOTIVE_MCP = re.compile(r"^[a-z]+(\.[a-z_]+|\.[a-z]+[A-Za-z]*)+$")


async def _tools(client: Any) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


def test_llm_names_follow_one_rule() -> None:
    assert llm_name("inventory.search") == "inventory_search"
    assert llm_name("deals.request_trade_value") == "deals_request_trade_value"
    assert llm_name("vertex.invokeModel") == "vertex_invoke_model"
    assert llm_name("nvidia.runInference") == "nvidia_run_inference"
    assert llm_name("gh.create-issue") == "gh_create_issue"
    assert llm_name("9lives") == "t_9lives"
    assert LLM_NAME.match(llm_name("x" * 100))
    assert llm_names(["a.b", "a_b"]) == {"a.b": "a_b_2", "a_b": "a_b"} or llm_names(["a.b", "a_b"]) == {
        "a.b": "a_b",
        "a_b": "a_b_2",
    }


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_canonical_names_follow_the_specs_and_names_llm_lists_safe_names_that_call_the_same_tool(
    live: LiveServer, keys: dict[str, str], mode: str, version: str
) -> None:
    async with http_client(keys["all"]) as hc, mcp_client(live.url, hc, mode) as client:
        assert client.protocol_version == version
        canonical = {t.name for t in await _tools(client)}
    assert {"inventory.search", "deals.request_trade_value", "vertex.invokeModel", "aap_inventory_search"} <= canonical
    for name in canonical:
        assert AUTOMOTIVE_MCP.match(name) or (name.startswith("aap_") and LLM_NAME.match(name)), name
    async with http_client(keys["all"]) as hc, mcp_client(f"{live.url}?names=llm", hc, mode) as client:
        safe = {t.name for t in await _tools(client)}
        args = {"dealership_id": TOYOTA, "limit": 2}
        by_safe = await client.call_tool("inventory_search", args)
        by_canonical = await client.call_tool("inventory.search", args)
    assert all(LLM_NAME.match(n) for n in safe)
    assert {"inventory_search", "deals_request_trade_value", "vertex_invoke_model", "aap_inventory_search"} <= safe
    assert len(safe) == len(canonical)
    assert not by_safe.is_error
    # The cursor carries its expiry in whole seconds; the page itself must be the same.
    assert _without_cursor(by_safe.structured_content) == _without_cursor(by_canonical.structured_content)


def _without_cursor(page: dict[str, object] | None) -> dict[str, object]:
    assert page is not None
    return {k: v for k, v in page.items() if k != "next_cursor"}


async def test_a_member_setting_asks_for_llm_names_where_the_url_cannot(live: LiveServer, keys: dict[str, str]) -> None:
    async with http_client(keys["llm"]) as hc, mcp_client(live.url, hc, "auto") as client:
        names = {t.name for t in await _tools(client)}
    assert "inventory_search" in names
    assert all(LLM_NAME.match(n) for n in names)


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_the_demo_crm_agents_tools_list_stays_within_its_token_budget(
    live: LiveServer, keys: dict[str, str], mode: str, version: str
) -> None:
    for url in (live.url, f"{live.url}?names=llm"):
        async with http_client(keys["crm"]) as hc, mcp_client(url, hc, mode) as client:
            tools = await _tools(client)
        tokens = token_counts(list_json(tools))
        assert set(tokens) == {"cl100k_base", "o200k_base"}
        assert all(n <= CRM_BUDGET_TOKENS for n in tokens.values()), f"the crm toolset's tools/list is {tokens}"
        for tool in tools:
            assert "$ref" not in json.dumps(tool.input_schema), tool.name
            assert "§" not in (tool.description or ""), tool.name


async def test_the_crm_toolset_lists_each_overlapping_tool_once(live: LiveServer, keys: dict[str, str]) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "auto") as client:
        names = {t.name for t in await _tools(client)}
        outside = await client.call_tool("events.list", {"dealership_id": TOYOTA, "limit": 1})
    assert {"inventory.search", "dealer.information", "leads.create", "deals.request_trade_value"} <= names
    assert not names & {"aap_inventory_search", "knowledge.search_inventory", "aap_dealer_information"}
    assert not names & {"vertex.invokeModel", "nvidia.runInference", "openai.invokeModel", "model.invoke"}
    assert not names & {"embedding.create", "workflow.run", "db.query"}
    assert not outside.is_error  # a toolset shapes what is listed; policy decides what may be called


def test_token_counts_are_made_without_the_network(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"),
    }
    code = "from forecourt.surfaces.mcp.tokens import token_counts; print(token_counts('hello world'))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "{'cl100k_base': 2, 'o200k_base': 2}"


def test_o200k_counts_are_tiktokens_own_encoding_of_the_published_ranks() -> None:
    text = 'Search SUVs under $35,000 — {"make": ["Toyota"], "price_max": 3500000} 日本語 🚗\n\n  end'
    encoded = [count_tokens(text, name) for name in ENCODINGS]
    assert encoded[0] != encoded[1]  # two different vocabularies
    assert o200k_vocab_file().is_file()
    # The package that ships the ranks has its own encoder: both agree, split pattern included.
    import quicktok  # type: ignore[import-not-found]

    assert encoded[1] == len(quicktok.get_encoding("o200k_base").encode(text))
    assert count_tokens("hello world", "o200k_base") == len([24912, 2375])
    with pytest.raises(ValueError, match="unknown encoding"):
        count_tokens("x", "p50k_base")


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_aap_tools_take_the_payload_without_its_type(
    live: LiveServer, keys: dict[str, str], mode: str, version: str
) -> None:
    async with http_client(keys["all"]) as hc, mcp_client(live.url, hc, mode) as client:
        tools = {t.name: t for t in await _tools(client)}
        result = await client.call_tool("aap_inventory_search", {"dealership_id": TOYOTA, "filters": {}})
        typed = await client.call_tool(
            "aap_inventory_search", {"dealership_id": TOYOTA, "type": "inventory.search.request", "filters": {}}
        )
    assert "type" not in tools["aap_inventory_search"].input_schema["properties"]
    assert "type" not in tools["aap_inventory_search"].input_schema.get("required", [])
    assert not result.is_error, result.content
    assert result.structured_content["type"] == "inventory.search.response"
    assert not typed.is_error


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_search_results_are_compact_with_a_summary_unless_the_full_view_is_asked(
    live: LiveServer, keys: dict[str, str], mode: str, version: str
) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, mode) as client:
        compact = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": 3})
        full = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": 3, "view": "full"})
    page = compact.structured_content
    assert len(page["items"]) == 3
    for vehicle in page["items"]:
        assert set(vehicle) <= set(VEHICLE)
        assert {"id", "vin", "price", "status"} <= set(vehicle)
    assert "updated_at" in full.structured_content["items"][0]
    summary = compact.content[0]
    assert isinstance(summary, types.TextContent)
    assert summary.text.startswith(f"3 of {page['total']} vehicles")
    if version == "2025-11-25":  # that era's spec: also the serialized JSON, for backwards compatibility
        assert len(compact.content) == 2
        assert json.loads(compact.content[1].text) == page  # type: ignore[union-attr]
    else:
        assert len(compact.content) == 1


def test_a_search_summary_marks_a_total_that_is_a_lower_bound() -> None:
    page = {"items": [{"id": str(n)} for n in range(20)], "total": 100, "total_relation": "gte", "next_cursor": "c"}
    assert summary("inventory.search", page).startswith("20 of 100+ vehicles; pass next_cursor for more")
    assert summary("inventory.search", {**page, "total_relation": "eq"}).startswith("20 of 100 vehicles;")


async def test_a_single_record_over_the_size_budget_answers_a_summary_and_a_resource_link(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "legacy") as client:
        found = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": 1})
        vehicle_id = found.structured_content["items"][0]["id"]
        live.surface.max_result_bytes = 300
        big = await client.call_tool("inventory.get", {"dealership_id": TOYOTA, "vehicle_id": vehicle_id})
    assert not big.is_error
    link = big.content[1]
    assert isinstance(link, types.ResourceLink)
    assert str(link.uri) == f"automotive://dealers/{TOYOTA}/vehicles/{vehicle_id}"
    assert big.structured_content["id"] == vehicle_id


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_prompts_for_common_dealer_tasks_name_the_tools_as_the_caller_sees_them(
    live: LiveServer, keys: dict[str, str], mode: str, version: str
) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(f"{live.url}?names=llm", hc, mode) as client:
        listed = {p.name for p in (await client.list_prompts()).prompts}
        suvs = await client.get_prompt("find_suvs_and_book_test_drive", {"budget": "35000", "dealership_id": TOYOTA})
        leads = await client.get_prompt("follow_up_new_leads", {"dealership_id": TOYOTA})
        order = await client.get_prompt(
            "summarise_repair_order", {"repair_order_id": "ro_tsf_0001", "dealership_id": TOYOTA}
        )
        with pytest.raises(MCPError) as bad:
            await client.get_prompt("find_suvs_and_book_test_drive", {"budget": "lots", "dealership_id": TOYOTA})
    assert {"follow_up_new_leads", "find_suvs_and_book_test_drive", "summarise_repair_order"} <= listed
    text = suvs.messages[0].content.text  # type: ignore[union-attr]
    assert "inventory_search" in text
    assert '"price_max": 3500000' in text
    assert "inventory.search" not in text
    assert "leads_list" in leads.messages[0].content.text  # type: ignore[union-attr]
    assert "service_get_repair_order" in order.messages[0].content.text  # type: ignore[union-attr]
    assert bad.value.code == types.INVALID_PARAMS


async def test_a_keys_toolset_replaces_its_members_in_the_listing(live: LiveServer, keys: dict[str, str]) -> None:
    async with http_client(keys["crm_service_key"]) as hc, mcp_client(live.url, hc, "auto") as client:
        names = {t.name for t in await _tools(client)}
    assert {"service.list_repair_orders", "service.get_repair_order"} <= names
    assert not names & {"leads.create", "inventory.search", "deals.request_trade_value"}


def test_the_cli_lists_a_members_tools_with_bytes_and_tokens(mcp_template: Template, tmp_path: Path) -> None:
    db = mcp_template.copy_to(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env.update({"FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}", "FORECOURT_LOG_LEVEL": "WARNING"})
    command = [
        str(Path(sys.executable).parent / "forecourt"),
        "tools",
        "list",
        "--member",
        "demo-motor-group/crm-agent",
        "--json",
    ]
    done = subprocess.run([*command, "--tokens"], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["toolset"] == "crm"
    assert set(report["tokens"]) == {"cl100k_base", "o200k_base"}
    assert all(0 < n <= CRM_BUDGET_TOKENS for n in report["tokens"].values())
    assert report["bytes"] > max(report["tokens"].values())
    assert all(set(t["tokens"]) == set(ENCODINGS) for t in report["per_tool"])
    assert {t["name"] for t in report["per_tool"]} >= {"inventory.search", "leads.create"}
    named = subprocess.run(
        [*command, "--names", "llm"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert "inventory_search" in json.loads(named.stdout)["tools"]


async def _live_with_policy(template: Template, tmp_path: Path, toolsets: tuple[str, ...]) -> LiveServer:
    db = template.copy_to(tmp_path)
    store = open_store_url(f"sqlite+aiosqlite:///{db}")
    try:
        async with store.transaction() as uow:
            await uow.tenancy.upsert_policy(Policy(id="toolsets", company_id=MOTOR, toolsets=toolsets))  # type: ignore[arg-type]
    finally:
        await store.close()
    server = LiveServer(lambda base: settings_for(db, public_base_url=base))
    await server.start()
    return server


async def test_a_policys_toolsets_are_what_a_member_without_one_is_offered(
    mcp_template: Template, tmp_path: Path, keys: dict[str, str]
) -> None:
    server = await _live_with_policy(mcp_template, tmp_path, ("crm", "service"))
    try:
        async with http_client(keys["all"]) as hc, mcp_client(server.url, hc, "auto") as client:
            names = {t.name for t in await _tools(client)}
            outside = await client.call_tool("events.list", {"dealership_id": TOYOTA, "limit": 1})
    finally:
        server.stop()
    assert {"leads.create", "inventory.search", "service.get_repair_order", "service.list_repair_orders"} <= names
    assert not names & {"vertex.invokeModel", "workflow.run", "aap_inventory_search", "events.list", "db.query"}
    assert not outside.is_error  # outside the offered tools, the gateway still decides, as for any call


async def test_a_members_toolset_narrows_the_policys_toolsets(
    mcp_template: Template, tmp_path: Path, keys: dict[str, str]
) -> None:
    server = await _live_with_policy(mcp_template, tmp_path, ("crm",))
    try:
        async with http_client(keys["crm_service_key"]) as hc, mcp_client(server.url, hc, "legacy") as client:
            narrowed = {t.name for t in await _tools(client)}
        async with http_client(keys["crm"]) as hc, mcp_client(f"{server.url}?names=llm", hc, "auto") as client:
            crm = {t.name for t in await _tools(client)}
    finally:
        server.stop()
    # service ∩ crm: consent, customers, appointments, dealer information, approvals; no repair orders, no leads
    assert {"consent.create", "customers.get", "service.book_appointment", "dealer.information"} <= narrowed
    assert not narrowed & {"service.get_repair_order", "service.list_repair_orders", "leads.create"}
    assert {"leads_create", "inventory_search", "deals_request_trade_value"} <= crm


def test_a_policy_refuses_a_toolset_that_does_not_exist() -> None:
    with pytest.raises(ValidationError):
        Policy(id="p", company_id=MOTOR, toolsets="sales")  # type: ignore[arg-type]
    assert Policy(id="p", company_id=MOTOR, toolsets="crm").toolsets == ("crm",)  # type: ignore[arg-type]
