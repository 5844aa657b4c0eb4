"""Probes: a forwarded client certificate from an untrusted peer on every door, and hostile BPMN uploads.

- ``X-Forwarded-Client-Cert`` carrying a registered member's real certificate, sent by a peer that is not a
  trusted proxy, authenticates nobody on any door (REST, admin REST, MCP, A2A) — and it does from a trusted
  proxy, so the refusal is the trust decision's.
- An uploaded BPMN document with an external entity (XXE), a billion-laughs entity bomb, a DTD fetched from
  the network, a document over the size limit or absurd nesting is refused with
  ``workflow.invalid_definition``; nothing is read from disk or network and the process stays responsive.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from forecourt.gateway.auth.mtls import certificate_fingerprint
from forecourt.store.base import Store
from gateway.support import MOTOR, TOYOTA, Rig, Template, start_rig, stop_rig
from gateway_auth import pki

from .conftest import HIGH_LIMITS
from .support import error_code_of

CA = pki.make_ca("Forecourt probe CA")
LEAF = pki.make_leaf(CA, "crm-agent")


async def _register_certificate(store: Store) -> None:
    async with store.transaction() as uow:
        member = await uow.tenancy.get_member(MOTOR, "crm-agent")
        assert member is not None
        await uow.tenancy.upsert_member(
            member.model_copy(update={"cert_fingerprint": certificate_fingerprint(LEAF.cert_pem)})
        )


async def _rig(template: Template, directory: Path, **overrides: Any) -> Rig:
    return await start_rig(template, directory, prepare=_register_certificate, **{**HIGH_LIMITS, **overrides})


@pytest.fixture
async def cert_rig(hostile_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    rig = await _rig(hostile_template, tmp_path)
    try:
        yield rig
    finally:
        await stop_rig(rig)


def _xfcc() -> dict[str, str]:
    return {"X-Forwarded-Client-Cert": f'Cert="{quote(LEAF.cert_pem)}"'}


DOORS: list[tuple[str, str, dict[str, Any], dict[str, str]]] = [
    ("POST", "/mcp/leads.list", {"payload": {"dealership_id": TOYOTA}}, {}),
    ("GET", f"/admin/v1/companies/{MOTOR}/members", {}, {}),
    (
        "POST",
        "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "leads.list", "arguments": {}}},
        {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25", "Host": "127.0.0.1"},
    ),
    ("GET", f"/admin/v1/dealerships/{TOYOTA}/leads/l-1/deliveries", {}, {}),
]


@pytest.mark.parametrize(("method", "path", "body", "headers"), DOORS, ids=[d[1] for d in DOORS])
async def test_a_forwarded_certificate_from_an_untrusted_peer_authenticates_nobody(
    cert_rig: Rig, method: str, path: str, body: dict[str, Any], headers: dict[str, str]
) -> None:
    response = await cert_rig.client.request(method, path, json=body or None, headers={**headers, **_xfcc()})
    assert response.status_code == 401, response.text[:300]


async def test_the_same_certificate_from_a_trusted_proxy_authenticates_its_member(
    hostile_template: Template, tmp_path: Path
) -> None:
    rig = await _rig(hostile_template, tmp_path, trusted_proxies=["127.0.0.1/32"])
    try:
        response = await rig.client.post(
            "/mcp/leads.list", json={"payload": {"dealership_id": TOYOTA}}, headers=_xfcc()
        )
    finally:
        await stop_rig(rig)
    assert response.status_code == 200, response.text[:300]


# ------------------------------------------------------------------ hostile BPMN

_PROCESS = (
    '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="x">'
    '<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/>'
    '<bpmn:scriptTask id="t"><bpmn:script>x = "{payload}"</bpmn:script></bpmn:scriptTask>'
    "</bpmn:process></bpmn:definitions>"
)
HOSTILE_BPMN = {
    "xxe-file": '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    + _PROCESS.replace("{payload}", "&x;"),
    "xxe-network": '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "http://169.254.169.254/latest/">]>'
    + _PROCESS.replace("{payload}", "&x;"),
    "external-dtd": '<?xml version="1.0"?><!DOCTYPE d SYSTEM "http://169.254.169.254/evil.dtd">'
    + _PROCESS.replace("{payload}", "y"),
    "parameter-entity": '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>'
    + _PROCESS.replace("{payload}", "y"),
    "billion-laughs": '<?xml version="1.0"?><!DOCTYPE d ['
    + '<!ENTITY a "aaaaaaaaaa">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
    + "]>"
    + _PROCESS.replace("{payload}", "&j;"),
    "huge": _PROCESS.replace("{payload}", "y" * (600 * 1024)),
    "deep": "<a>" * 100_000 + "</a>" * 100_000,
    "not-xml": "\x00\x01\x02 not xml at all",
}


@pytest.mark.parametrize("case", sorted(HOSTILE_BPMN))
async def test_a_hostile_bpmn_upload_is_refused_without_reading_anything(rig: Rig, case: str) -> None:
    response = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/workflows/hostile",
        json={"bpmn": HOSTILE_BPMN[case]},
        headers={"Authorization": f"Bearer {rig.keys['admin']}"},
    )
    assert 400 <= response.status_code < 500, response.text[:300]
    assert error_code_of(response.json()) in ("workflow.invalid_definition", "invalid_params", "payload_too_large")
    assert "root:" not in response.text
    listed = await rig.client.get(
        f"/admin/v1/companies/{MOTOR}/workflows", headers={"Authorization": f"Bearer {rig.keys['admin']}"}
    )
    assert "hostile" not in {w["workflow_id"] for w in listed.json()["items"]}
