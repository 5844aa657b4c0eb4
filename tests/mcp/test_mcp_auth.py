"""The HTTP edge of /mcp: OAuth resource-server behaviour, Host protection, the public dealer agent, routing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import MCPError
from mcp_support import TOYOTA, LiveServer, Template, http_client, mcp_client, settings_for

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "leads.create", "arguments": {}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def _post(live: LiveServer, body: dict[str, Any], token: str | None = None, **headers: str) -> httpx2.Response:
    sent = {**HEADERS, **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient(timeout=10) as hc:
        return await hc.post(live.url, content=json.dumps(body), headers=sent)


def _challenge(response: httpx2.Response) -> dict[str, str]:
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer ")
    params: dict[str, str] = {}
    for part in header[len("Bearer ") :].split(", "):
        key, _, value = part.partition("=")
        params[key] = value.strip('"')
    return params


async def test_no_token_gets_a_challenge_naming_the_scope_and_metadata(live: LiveServer) -> None:
    response = await _post(live, CALL)
    assert response.status_code == 401
    params = _challenge(response)
    assert params["scope"] == "amcp:leads:write"
    assert params["resource_metadata"] == f"{live.base_url}/.well-known/oauth-protected-resource/mcp"
    assert "error" not in params  # nothing was presented (RFC 6750 §3.1)
    body = response.json()
    assert body["id"] == 7
    assert body["error"]["data"]["code"] == "auth.unauthorized"


async def test_a_wrong_token_and_an_expired_token_are_told_apart(live: LiveServer, keys: dict[str, str]) -> None:
    wrong = await _post(live, INIT, "fck_wrongprefix_" + "x" * 40)
    expired = await _post(live, INIT, keys["crm_expired"])
    for response in (wrong, expired):
        assert response.status_code == 401
        assert _challenge(response)["error"] == "invalid_token"
        assert response.json()["error"]["code"] == -32001
    assert wrong.json()["error"]["data"]["code"] == "auth.unauthorized"
    assert expired.json()["error"]["data"]["code"] == "auth.expired"


async def test_the_sdk_client_sees_the_401_for_an_expired_token(live: LiveServer, keys: dict[str, str]) -> None:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the SDK raises its transport error type
        async with http_client(keys["crm_expired"]) as hc, mcp_client(live.url, hc, "auto") as client:
            await client.list_tools()
    assert "401" in repr(caught.value) or isinstance(caught.value, MCPError | BaseExceptionGroup)


async def test_protected_resource_metadata_follows_rfc_9728(live: LiveServer) -> None:
    async with httpx2.AsyncClient() as hc:
        doc = (await hc.get(f"{live.base_url}/.well-known/oauth-protected-resource/mcp")).json()
        root = (await hc.get(f"{live.base_url}/.well-known/oauth-protected-resource")).json()
    assert doc == root
    assert doc["resource"] == f"{live.base_url}/mcp"
    assert doc["bearer_methods_supported"] == ["header"]
    assert "amcp:inventory:read" in doc["scopes_supported"]


async def test_a_foreign_host_header_is_refused(live: LiveServer, keys: dict[str, str]) -> None:
    rebinding = await _post(live, INIT, keys["crm"], Host="evil.example.com")
    bad_origin = await _post(live, INIT, keys["crm"], Origin="https://evil.example.com")
    ok = await _post(live, INIT, keys["crm"], Host=f"localhost:{live.port}")
    assert rebinding.status_code == 421
    assert bad_origin.status_code == 421
    assert ok.status_code == 200


async def test_configured_hosts_are_enforced_for_real_deployments(mcp_template: Template, tmp_path: Path) -> None:
    db = mcp_template.copy_to(tmp_path)
    server = LiveServer(
        lambda base: settings_for(db, public_base_url=base, allowed_hosts=["mcp.dealer.example", "*.fc.example"])
    )
    await server.start()
    try:
        token = mcp_template.keys["crm"]
        allowed = await _post(server, INIT, token, Host="mcp.dealer.example")
        wildcard = await _post(server, INIT, token, Host="eu.fc.example:8443")
        refused = await _post(server, INIT, token, Host=f"127.0.0.1:{server.port}")
    finally:
        server.stop()
    assert allowed.status_code == 200
    assert wildcard.status_code == 200
    assert refused.status_code == 421


async def test_post_mcp_is_the_transport_and_mcp_action_stays_the_rest_envelope(
    live: LiveServer, keys: dict[str, str]
) -> None:
    transport = await _post(live, INIT, keys["crm"])
    async with httpx2.AsyncClient() as hc:
        rest = await hc.post(
            f"{live.url}/inventory.search",
            json={"id": "r1", "payload": {"dealership_id": TOYOTA, "limit": 1}},
            headers={"Authorization": f"Bearer {keys['crm']}"},
        )
    assert transport.status_code == 200
    assert transport.headers.get("mcp-session-id")
    assert rest.status_code == 200
    assert rest.json()["status"]["code"] == 200
    assert len(rest.json()["result"]["output"]["items"]) == 1


async def test_a_public_dealer_agent_answers_anonymous_callers_only_for_public_tools(live: LiveServer) -> None:
    async with http_client() as hc, mcp_client(live.url, hc, "auto") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        info = await client.call_tool(
            "aap_dealer_information", {"dealership_id": TOYOTA, "type": "dealer.information.request"}
        )
    assert names
    assert all(n.startswith("aap_") for n in names)
    assert not info.is_error, info.structured_content
    private = await _post(
        live,
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "inventory.search", "arguments": {}}},
        **{"MCP-Protocol-Version": "2025-11-25"},
    )
    assert private.status_code == 401
    assert _challenge(private)["scope"] == "amcp:inventory:read"
    resources = await _post(live, {"jsonrpc": "2.0", "id": 4, "method": "resources/list", "params": {}})
    assert resources.status_code == 401


async def test_a_legacy_session_cannot_be_used_with_another_credential(live: LiveServer, keys: dict[str, str]) -> None:
    opened = await _post(live, INIT, keys["crm"])
    session = opened.headers["mcp-session-id"]
    hijack = await _post(
        live,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        keys["bay"],
        **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
    )
    assert hijack.status_code == 404


async def test_long_streams_carry_keep_alive_comments(mcp_template: Template, tmp_path: Path) -> None:
    db = mcp_template.copy_to(tmp_path)
    server = LiveServer(lambda base: settings_for(db, public_base_url=base, mcp_sse_ping_s=0.1))
    await server.start()
    try:
        token = mcp_template.keys["crm"]
        opened = await _post(server, INIT, token)
        session = opened.headers["mcp-session-id"]
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "text/event-stream",
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": "2025-11-25",
        }
        pings = 0
        async with httpx2.AsyncClient(timeout=10) as hc, hc.stream("GET", server.url, headers=headers) as stream:
            assert stream.status_code == 200
            async for line in stream.aiter_lines():
                if line.startswith(": ping"):
                    pings += 1
                    if pings == 2:
                        break
    finally:
        server.stop()
    assert pings == 2
