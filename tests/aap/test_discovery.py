"""Per-dealership discovery: card, manifest and LLM guide; the root documents chosen by Host."""

from __future__ import annotations

from typing import Any

import httpx

from forecourt.adapters.aap.checker import card_requires_bearer
from forecourt.domain.aap_spec import EXTENSION_URI, SKILL_IDS, errors

from .support import HONDA, TOYOTA, LiveServer, Rig


def _get(live: LiveServer, path: str, **kw: Any) -> httpx.Response:
    return httpx.get(live.url + path, **kw)


def test_the_card_validates_and_declares_the_aap_extension_and_both_bindings(live: LiveServer) -> None:
    card = _get(live, f"/dealers/{TOYOTA}/.well-known/agent-card.json").json()
    assert errors("agent-card.schema.json", card) == []
    ext = next(e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI)
    assert ext["params"]["aap_skill_ids"] == list(SKILL_IDS)
    assert ext["params"]["manifest_url"] == f"{live.url}/dealers/{TOYOTA}/.well-known/auto-agent-contract.json"
    assert [s["id"] for s in card["skills"]] == list(SKILL_IDS)
    bindings = {i["protocol_binding"]: i["url"] for i in card["supported_interfaces"]}
    assert bindings == {
        "JSONRPC": f"{live.url}/dealers/{TOYOTA}/a2a/jsonrpc",
        "HTTP+JSON": f"{live.url}/dealers/{TOYOTA}/a2a",
    }
    assert card["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"  # for @a2a-js/sdk


def test_the_manifest_validates_and_its_auth_type_agrees_with_the_card(live: LiveServer) -> None:
    card = _get(live, f"/dealers/{TOYOTA}/.well-known/agent-card.json").json()
    manifest = _get(live, f"/dealers/{TOYOTA}/.well-known/auto-agent-contract.json").json()
    assert errors("contract-manifest.schema.json", manifest) == []
    assert manifest["auth_type"] is None
    assert card_requires_bearer(card) is False
    assert {s["id"] for s in manifest["a2a"]["skills"]} == {s["id"] for s in card["skills"]}
    guide = _get(live, f"/dealers/{TOYOTA}/.well-known/auto-agent-llm-guide.md")
    assert guide.status_code == 200
    assert guide.headers["content-type"].startswith("text/markdown")
    assert manifest["llm"]["guide_url"].endswith("/.well-known/auto-agent-llm-guide.md")
    assert "lead_submission" in guide.text


async def test_a_bearer_dealership_declares_bearer_in_card_and_manifest(rig: Rig) -> None:
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(HONDA)
        assert dealer is not None
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"public_agent": False, "domain": "honda.test"}))
    card = (await rig.client.get(f"/dealers/{HONDA}/.well-known/agent-card.json")).json()
    manifest = (await rig.client.get(f"/dealers/{HONDA}/.well-known/auto-agent-contract.json")).json()
    assert errors("agent-card.schema.json", card) == []
    assert errors("contract-manifest.schema.json", manifest) == []
    assert card_requires_bearer(card) is True
    assert manifest["auth_type"] == "bearer"
    assert "bearer" in card["security_schemes"]


async def test_the_root_documents_follow_the_host_header_else_the_default_dealership(rig: Rig) -> None:
    toyota_host = "toyota-sf.demo.forecourt.example"
    by_host = (await rig.client.get("/.well-known/agent-card.json", headers={"host": toyota_host})).json()
    assert f"/dealers/{TOYOTA}/a2a" in by_host["supported_interfaces"][0]["url"]
    async with rig.services.store.transaction() as uow:
        honda = await uow.tenancy.get_dealership(HONDA)
    assert honda is not None
    assert honda.domain
    honda_card = (await rig.client.get("/.well-known/agent-card.json", headers={"host": f"{honda.domain}:443"})).json()
    assert f"/dealers/{HONDA}/" in honda_card["supported_interfaces"][0]["url"]
    unknown = (await rig.client.get("/.well-known/auto-agent-contract.json", headers={"host": "elsewhere.test"})).json()
    assert unknown["dealer"]["dealer_id"] == TOYOTA  # settings.default_dealership
    assert (await rig.client.get("/dealers/nope/.well-known/agent-card.json")).status_code == 404
