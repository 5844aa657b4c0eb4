"""Probe: each company's MCP protected resource names only its own identity provider (issue 11, item 1).

Unauthenticated RFC 9728 metadata is read from the shared ``/mcp`` resource and from every company's own
``/companies/{id}/mcp``; the challenges of every resource are collected without credentials and with another
company's key. No document or challenge may name, or point at, another company's issuer.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from forecourt.domain.tenancy import Company
from forecourt.store.base import Store
from gateway.support import BAY, MOTOR, Rig, Template, start_rig, stop_rig

from .conftest import HIGH_LIMITS

MOTOR_IDP = "https://login.motor-group.example"
BAY_IDP = "https://id.bay-autos.example"
OPERATOR_AS = "https://auth.operator.example"
BASE = "http://127.0.0.1:8000"
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
    "Content-Type": "application/json",
    "Host": "127.0.0.1",
}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "leads.list", "arguments": {}}}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}


async def _issuers(store: Store) -> None:
    async with store.transaction() as uow:
        for company_id, issuer in ((MOTOR, MOTOR_IDP), (BAY, BAY_IDP)):
            company = await uow.tenancy.get_company(company_id)
            assert company is not None
            await uow.tenancy.upsert_company(Company(**{**company.model_dump(), "oidc_issuer": issuer}))


async def _start(template: Template, directory: Path, **overrides: Any) -> Rig:
    return await start_rig(template, directory, prepare=_issuers, public_base_url=BASE, **HIGH_LIMITS, **overrides)


@pytest.fixture
async def idp_rig(hostile_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    made = await _start(hostile_template, tmp_path)
    try:
        yield made
    finally:
        await stop_rig(made)


def _metadata_url(challenge: str) -> str:
    found = re.search(r'resource_metadata="([^"]+)"', challenge)
    assert found, challenge
    return found.group(1)


async def test_the_shared_resource_names_no_companys_identity_provider(idp_rig: Rig) -> None:
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        doc = (await idp_rig.client.get(path)).json()
        assert doc["resource"] == f"{BASE}/mcp"
        assert doc.get("authorization_servers", []) == []
        assert MOTOR_IDP not in str(doc)
        assert BAY_IDP not in str(doc)


async def test_the_shared_resource_names_the_operators_servers_only(hostile_template: Template, tmp_path: Path) -> None:
    rig = await _start(hostile_template, tmp_path, mcp_authorization_servers=[OPERATOR_AS])
    try:
        doc = (await rig.client.get("/.well-known/oauth-protected-resource/mcp")).json()
    finally:
        await stop_rig(rig)
    assert doc["authorization_servers"] == [OPERATOR_AS]


@pytest.mark.parametrize(("company", "own", "other"), [(MOTOR, MOTOR_IDP, BAY_IDP), (BAY, BAY_IDP, MOTOR_IDP)])
async def test_a_companys_own_resource_names_only_its_identity_provider(
    idp_rig: Rig, company: str, own: str, other: str
) -> None:
    doc = (await idp_rig.client.get(f"/.well-known/oauth-protected-resource/companies/{company}/mcp")).json()
    assert doc["resource"] == f"{BASE}/companies/{company}/mcp"
    assert doc["authorization_servers"] == [own]
    assert other not in str(doc)


async def test_an_unknown_companys_resource_does_not_exist(idp_rig: Rig) -> None:
    assert (await idp_rig.client.get("/.well-known/oauth-protected-resource/companies/nope/mcp")).status_code == 404
    response = await idp_rig.client.post("/companies/nope/mcp", json=CALL, headers=MCP_HEADERS)
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("path", "key", "metadata"),
    [
        ("/mcp", None, "/.well-known/oauth-protected-resource/mcp"),
        ("/mcp", "not-a-key", "/.well-known/oauth-protected-resource/mcp"),
        (f"/companies/{MOTOR}/mcp", None, f"/.well-known/oauth-protected-resource/companies/{MOTOR}/mcp"),
        (f"/companies/{MOTOR}/mcp", "bay", f"/.well-known/oauth-protected-resource/companies/{MOTOR}/mcp"),
        (f"/companies/{BAY}/mcp", "crm", f"/.well-known/oauth-protected-resource/companies/{BAY}/mcp"),
    ],
)
async def test_each_resource_challenges_with_its_own_metadata(
    idp_rig: Rig, path: str, key: str | None, metadata: str
) -> None:
    headers = dict(MCP_HEADERS)
    if key is not None:
        headers["Authorization"] = f"Bearer {idp_rig.keys.get(key, key)}"
    response = await idp_rig.client.post(path, json=CALL, headers=headers)
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert _metadata_url(challenge) == f"{BASE}{metadata}"
    linked = (await idp_rig.client.get(metadata)).json()
    named = {MOTOR_IDP, BAY_IDP} & set(linked.get("authorization_servers", []))
    if path == "/mcp":
        assert named == set()
    else:
        assert named == ({MOTOR_IDP} if MOTOR in path else {BAY_IDP})


async def test_a_company_key_works_at_its_own_resource(idp_rig: Rig) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {idp_rig.keys['crm']}"}
    response = await idp_rig.client.post(f"/companies/{MOTOR}/mcp", json=INIT, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers.get("mcp-session-id")
