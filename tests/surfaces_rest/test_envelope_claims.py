"""Seed 001's envelope claims on ``POST /mcp/{action}``: ``action.version`` and ``security.auth.method``."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.support import MOTOR, TOYOTA, Rig, error_code


async def _post(rig: Rig, body: dict[str, Any], key: str | None = "crm") -> httpx.Response:
    headers = {"Authorization": f"Bearer {rig.keys[key]}"} if key else {}
    return await rig.client.post("/mcp/dealer.information", json=body, headers=headers)


def _envelope(*, version: str | None = "v1", method: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "req-1",
        "action": {"type": "tool.run", "name": "dealer.information", "version": version},
        "payload": {"dealership_id": TOYOTA},
    }
    if method is not None:
        body["security"] = {"auth": {"method": method}, "companyContext": {"companyId": MOTOR}}
    return body


async def test_an_envelope_naming_the_actions_version_and_the_seeds_api_key_method_is_answered(rig: Rig) -> None:
    response = await _post(rig, _envelope(version="v1", method="mcp-api-key"))
    assert response.status_code == 200, response.text


async def test_an_unknown_action_version_is_refused_naming_the_supported_version(rig: Rig) -> None:
    response = await _post(rig, _envelope(version="v2"))
    assert (response.status_code, error_code(response)) == (400, "invalid_request")
    details = response.json()["status"]["error"]["details"]
    assert details == {"field": "action.version", "supported": ["v1"]}
    assert response.json()["result"] is None


async def test_an_unknown_auth_method_is_refused_naming_the_supported_methods(rig: Rig) -> None:
    response = await _post(rig, _envelope(method="bogus"))
    assert (response.status_code, error_code(response)) == (400, "invalid_request")
    details = response.json()["status"]["error"]["details"]
    assert details["field"] == "security.auth.method"
    assert {"mcp-api-key", "oidc", "mtls"} <= set(details["supported"])
    assert "bogus" not in details["supported"]


async def test_an_auth_method_that_names_another_kind_of_credential_is_refused(rig: Rig) -> None:
    for method in ("mtls", "firebase-id-token", "none"):
        response = await _post(rig, _envelope(method=method))
        assert (response.status_code, error_code(response)) == (400, "invalid_request"), method
        details = response.json()["status"]["error"]["details"]
        assert details["field"] == "security.auth.method"
        assert "mcp-api-key" in details["supported"]
        assert "mtls" not in details["supported"]


async def test_an_api_key_method_without_any_credential_is_refused_as_a_mismatch(rig: Rig) -> None:
    response = await _post(rig, _envelope(method="mcp-api-key"), key=None)
    assert (response.status_code, error_code(response)) == (400, "invalid_request")
    assert response.json()["status"]["error"]["details"]["supported"] == ["none"]
