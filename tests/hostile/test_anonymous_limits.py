"""Probe: every door's anonymous path is limited by the owning company's policy (issue 11, item 6).

Anonymous callers of a public dealer agent (AAP over both A2A bindings, MCP, the REST envelope where it allows
them) count against the dealership's company: its ``anonymous_per_minute`` per client, and all of them
together against its company limit. Behind a trusted proxy each client has its own bucket; from an untrusted
peer ``X-Forwarded-For`` changes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from forecourt.cli.preflight import startup_problems, startup_warnings
from forecourt.settings import Settings
from gateway.support import MOTOR, TOYOTA, Rig, Template, set_policy, start_rig, stop_rig

from .conftest import HIGH_LIMITS

SEARCH = {"type": "inventory.search.request", "filters": {}}
_MEDIA = "application/vnd.autoagent.inventory-search-request+json"


def _message() -> dict[str, Any]:
    return {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": SEARCH, "mediaType": _MEDIA}]}


async def _a2a_rpc(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": _message()}}
    response = await client.post(f"/dealers/{TOYOTA}/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0", **headers})
    data = response.json()
    limited = "error" in data and data["error"].get("data", {}).get("code") == "RATE_LIMITED"
    return 429 if limited else response.status_code


async def _a2a_rest(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    response = await client.post(
        f"/dealers/{TOYOTA}/a2a/message:send", json={"message": _message()}, headers={"A2A-Version": "1.0", **headers}
    )
    return response.status_code


async def _mcp(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "aap_inventory_search",
            "arguments": {"dealership_id": TOYOTA, "type": "inventory.search.request"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    mcp_headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "aap_inventory_search",
        "Host": "127.0.0.1",
        **headers,
    }
    response = await client.post("/mcp", json=body, headers=mcp_headers)
    return 429 if "rate_limited" in response.text else response.status_code


DOORS = {"a2a-jsonrpc": _a2a_rpc, "a2a-rest": _a2a_rest, "mcp": _mcp}


async def _limited_rig(template: Template, directory: Path, limits: dict[str, int], **overrides: Any) -> Rig:
    async def prepare(store: Any) -> None:
        await set_policy(store, MOTOR, rate_limits=limits)

    return await start_rig(template, directory, prepare=prepare, **{**HIGH_LIMITS, **overrides})


@pytest.fixture
async def per_client_rig(hostile_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    rig = await _limited_rig(hostile_template, tmp_path, {"anonymous_per_minute": 2})
    try:
        yield rig
    finally:
        await stop_rig(rig)


@pytest.mark.parametrize("door", sorted(DOORS))
async def test_the_companys_per_client_limit_applies_to_anonymous_callers_of_its_public_agent(
    per_client_rig: Rig, door: str
) -> None:
    statuses = [await DOORS[door](per_client_rig.client, {}) for _ in range(3)]
    assert statuses[:2] != [429, 429], statuses
    assert statuses[2] == 429, statuses


async def test_the_companys_limit_caps_all_its_anonymous_callers_together(
    hostile_template: Template, tmp_path: Path
) -> None:
    rig = await _limited_rig(hostile_template, tmp_path, {"company_per_minute": 3}, trusted_proxies=["127.0.0.1/32"])
    try:
        statuses = [await _a2a_rest(rig.client, {"X-Forwarded-For": f"198.51.100.{n}"}) for n in range(1, 5)]
    finally:
        await stop_rig(rig)
    assert statuses[:3] == [200, 200, 200], statuses
    assert statuses[3] == 429, statuses


async def test_behind_a_trusted_proxy_each_anonymous_client_has_its_own_bucket(
    hostile_template: Template, tmp_path: Path
) -> None:
    rig = await _limited_rig(hostile_template, tmp_path, {"anonymous_per_minute": 1}, trusted_proxies=["127.0.0.1/32"])
    try:
        first = [await _a2a_rest(rig.client, {"X-Forwarded-For": f"203.0.113.{n}"}) for n in range(1, 4)]
        again = await _a2a_rest(rig.client, {"X-Forwarded-For": "203.0.113.1"})
        spoofed = await _a2a_rest(rig.client, {"X-Forwarded-For": "203.0.113.1, 203.0.113.9"})
    finally:
        await stop_rig(rig)
    assert first == [200, 200, 200]
    assert again == 429
    assert spoofed == 200  # the right-most untrusted hop is the client; what it prepends is its own business


async def test_an_untrusted_peer_cannot_escape_its_bucket_with_x_forwarded_for(per_client_rig: Rig) -> None:
    statuses = [await _a2a_rest(per_client_rig.client, {"X-Forwarded-For": f"192.0.2.{n}"}) for n in range(1, 4)]
    assert statuses[2] == 429, statuses


def test_serve_refuses_a_public_bind_declared_behind_a_proxy_without_trusted_proxies() -> None:
    secrets = {
        "cursor_secret": "Zq7v3Kx9Lm2Pw8Rt5Yb1Nc6Hd4Jf0Gs-",
        "api_key_pepper": "Hy4Tn8Wq2Mc6Vx0Lp3Rk9Bf5Zd7Js1Ga_",
        "public_base_url": "https://fc.example.com",
    }
    problems = startup_problems(Settings(host="0.0.0.0", behind_proxy=True, **secrets))  # type: ignore[arg-type]
    assert len(problems) == 1
    assert "FORECOURT_TRUSTED_PROXIES" in problems[0]
    trusted = Settings(host="0.0.0.0", behind_proxy=True, trusted_proxies=["10.0.0.0/8"], **secrets)  # type: ignore[arg-type]
    assert startup_problems(trusted) == []
    assert startup_warnings(trusted) == []
    assert startup_warnings(Settings(host="0.0.0.0", **secrets))  # type: ignore[arg-type]
