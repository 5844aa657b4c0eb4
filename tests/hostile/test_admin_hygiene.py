"""Probe: admin hygiene (issue 11, item 9).

An admin cannot mint a key for another company's dealership or for a scope the member lacks; nothing can be
watched over MCP that could not be read; no policy or member change can lock the company out of its own
admin actions, and the operator has a command that reopens a company locked by older data.
"""

from __future__ import annotations

from typing import Any

import pytest

from forecourt.cli.admin import invoke_admin
from gateway.support import BAY_SJ, HONDA, MOTOR, TOYOTA, Rig, set_policy

from .support import error_code_of

ADMIN = f"/admin/v1/companies/{MOTOR}"


def _admin(rig: Rig) -> dict[str, str]:
    return {"Authorization": f"Bearer {rig.keys['admin']}"}


async def _key_prefixes(rig: Rig) -> set[str]:
    response = await rig.client.get(f"{ADMIN}/keys", headers=_admin(rig))
    return {k["prefix"] for k in response.json()["items"]}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"member_id": "crm-agent", "dealership_ids": [BAY_SJ]}, 403, "auth.tenancy_denied"),
        ({"member_id": "crm-agent", "dealership_ids": [TOYOTA, BAY_SJ]}, 403, "auth.tenancy_denied"),
        ({"member_id": "crm-agent", "dealership_ids": ["no-such-rooftop"]}, 403, "auth.tenancy_denied"),
        ({"member_id": "shopper-agent", "scopes": ["amcp:leads:read", "amcp:customers:read"]}, 422, "invalid_params"),
        ({"member_id": "crm-agent", "scopes": ["amcp:admin:write"]}, 422, "invalid_params"),
        ({"member_id": "ops-admin", "scopes": ["amcp:*:write"]}, 422, "invalid_params"),
    ],
)
async def test_a_key_beyond_its_members_grants_is_refused_and_never_created(
    rig: Rig, body: dict[str, Any], status: int, code: str
) -> None:
    before = await _key_prefixes(rig)
    response = await rig.client.post(f"{ADMIN}/keys", headers=_admin(rig), json=body)
    assert response.status_code == status, response.text
    assert error_code_of(response.json()) == code
    assert await _key_prefixes(rig) == before


async def test_a_key_within_its_members_grants_is_created(rig: Rig) -> None:
    body = {"member_id": "crm-agent", "dealership_ids": [HONDA], "scopes": ["amcp:inventory:read"]}
    response = await rig.client.post(f"{ADMIN}/keys", headers=_admin(rig), json=body)
    assert response.status_code == 201, response.text


LOCKING_POLICIES = [
    {"denied_actions": ["*"]},
    {"denied_actions": ["admin.*"]},
    {"denied_actions": ["admin.policies.upsert"]},
    {"allowed_actions": ["inventory.*", "leads.*"]},
    {"denied_adapters": ["admin"]},
    {"allowed_adapters": ["store"]},
    {"allow_side_effects": False},
]


@pytest.mark.parametrize("policy", LOCKING_POLICIES)
async def test_a_policy_that_would_remove_the_last_admin_path_is_refused(rig: Rig, policy: dict[str, Any]) -> None:
    response = await rig.client.put(f"{ADMIN}/policies/lockout", headers=_admin(rig), json={"name": "x", **policy})
    assert response.status_code == 409, response.text
    assert error_code_of(response.json()) == "admin.lockout"
    listed = await rig.client.get(f"{ADMIN}/policies", headers=_admin(rig))
    assert listed.status_code == 200
    assert "lockout" not in {p["id"] for p in listed.json()["items"]}


async def test_a_policy_that_leaves_the_admin_path_is_accepted(rig: Rig) -> None:
    body = {"name": "no leads", "denied_actions": ["leads.*", "model.*"]}
    response = await rig.client.put(f"{ADMIN}/policies/no-leads", headers=_admin(rig), json=body)
    assert response.status_code == 200, response.text


async def test_demoting_the_last_active_admin_member_is_refused(rig: Rig) -> None:
    listed = (await rig.client.get(f"{ADMIN}/members", headers=_admin(rig))).json()["items"]
    admin = next(m for m in listed if m["id"] == "ops-admin")
    for change in ({"is_admin": False}, {"active": False}):
        response = await rig.client.put(f"{ADMIN}/members/ops-admin", headers=_admin(rig), json={**admin, **change})
        assert response.status_code == 409, response.text
        assert error_code_of(response.json()) == "admin.lockout"


async def test_the_operator_reopens_a_company_locked_by_older_data(rig: Rig) -> None:
    await set_policy(rig.services.store, MOTOR, denied_actions=("*",), allow_side_effects=False)
    rig.gateway.tenancy.invalidate()
    locked = await rig.client.get(f"{ADMIN}/policies", headers=_admin(rig))
    assert locked.status_code == 403

    report = await invoke_admin(rig.services.settings, "admin.access.restore", {"company_id": MOTOR})

    assert report["reopened_policies"] == [f"{MOTOR}-default"]
    assert "ops-admin" in report["active_admins"]
    rig.gateway.tenancy.invalidate()
    reopened = await rig.client.get(f"{ADMIN}/policies", headers=_admin(rig))
    assert reopened.status_code == 200, reopened.text
    still_denied = await rig.call("inventory.search", {"dealership_id": TOYOTA})
    assert still_denied.status_code == 403  # only the admin path was reopened


async def test_restoring_access_is_the_operators_alone(rig: Rig) -> None:
    response = await rig.call("admin.access.restore", {"company_id": MOTOR}, key="admin")
    assert response.status_code == 403


# ------------------------------------------------------------------ MCP: watching is reading

_MCP = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
    "Content-Type": "application/json",
    "Host": "127.0.0.1",
}


async def _legacy_session(rig: Rig, key: str) -> dict[str, str]:
    headers = {**_MCP, "Authorization": f"Bearer {rig.keys[key]}"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    response = await rig.client.post("/mcp", json=init, headers=headers)
    assert response.status_code == 200, response.text
    headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
    await rig.client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


async def _rpc(rig: Rig, headers: dict[str, str], method: str, params: dict[str, Any]) -> dict[str, Any]:
    import json

    response = await rig.client.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, headers=headers
    )
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return dict(json.loads(response.text))
    # An event stream: the first event with a JSON payload (a priming event carries an id and an empty data line).
    payloads = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(next(p for p in payloads if p)))


@pytest.mark.parametrize(
    ("uri", "prepare"),
    [
        (f"automotive://dealers/{TOYOTA}/leads/lead-that-does-not-exist", None),
        (f"automotive://dealers/{TOYOTA}/leads", {"denied_actions": ("leads.list",)}),
        (f"automotive://dealers/{BAY_SJ}/leads", None),
        ("automotive://dealers/no-such-rooftop/customers", None),
    ],
)
async def test_a_uri_that_cannot_be_read_cannot_be_subscribed(
    rig: Rig, uri: str, prepare: dict[str, Any] | None
) -> None:
    if prepare is not None:
        await set_policy(rig.services.store, MOTOR, **prepare)
        rig.gateway.tenancy.invalidate()
    headers = await _legacy_session(rig, "crm")
    read = await _rpc(rig, headers, "resources/read", {"uri": uri})
    subscribed = await _rpc(rig, headers, "resources/subscribe", {"uri": uri})
    assert "error" in read, read
    assert "error" in subscribed, subscribed
    assert subscribed["error"]["data"]["code"] == read["error"]["data"]["code"]


async def test_a_member_with_an_unknown_toolset_is_refused_and_nothing_is_saved(rig: Rig) -> None:
    listed = (await rig.client.get(f"{ADMIN}/members", headers=_admin(rig))).json()["items"]
    crm = next(m for m in listed if m["id"] == "crm-agent")
    response = await rig.client.put(
        f"{ADMIN}/members/crm-agent", headers=_admin(rig), json={**crm, "toolset": "everything"}
    )
    assert response.status_code == 422, response.text
    assert error_code_of(response.json()) == "invalid_params"
    after = (await rig.client.get(f"{ADMIN}/members", headers=_admin(rig))).json()["items"]
    assert next(m for m in after if m["id"] == "crm-agent")["toolset"] == crm["toolset"]
