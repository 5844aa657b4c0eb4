"""Per-dealership discovery: card, manifest and LLM guide; the root documents chosen by Host."""

from __future__ import annotations

import json
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


# Every field whose AAP (snake_case) and A2A v1.0 (camelCase) names differ, as (AAP name, A2A name).
TWINS = [
    ("supported_interfaces", "supportedInterfaces"),
    ("default_input_modes", "defaultInputModes"),
    ("default_output_modes", "defaultOutputModes"),
    ("security_schemes", "securitySchemes"),
    ("security_requirements", "securityRequirements"),
]


def _a2a_view(card: dict[str, Any]) -> dict[str, Any]:
    """What a strict A2A v1.0 reader sees: the camelCase names only, every snake_case twin left out."""
    snake = {s for s, _ in TWINS}
    view = {k: v for k, v in card.items() if k not in snake}
    view["skills"] = [{k: v for k, v in s.items() if k not in ("input_modes", "output_modes")} for s in card["skills"]]
    return view


def _strict_parse(view: dict[str, Any]) -> Any:
    from a2a.types import AgentCard
    from google.protobuf.json_format import ParseDict

    return ParseDict(view, AgentCard(), ignore_unknown_fields=False)


async def test_the_card_speaks_both_aap_and_strict_a2a_v1_for_a_public_and_a_bearer_dealer(rig: Rig) -> None:
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(HONDA)
        assert dealer is not None
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"public_agent": False}))
    for dealer_id, bearer in ((TOYOTA, False), (HONDA, True)):
        card = (await rig.client.get(f"/dealers/{dealer_id}/.well-known/agent-card.json")).json()
        assert errors("agent-card.schema.json", card) == []
        for snake, camel in TWINS:
            assert snake in card, snake
            assert camel in card, camel
        # Optional protobuf fields (one name only, or protobuf parsers refuse the card): the A2A spelling.
        assert card["capabilities"]["pushNotifications"] is True
        assert "push_notifications" not in card["capabilities"]
        assert card["documentationUrl"].endswith("/.well-known/auto-agent-llm-guide.md")
        from a2a.client.card_resolver import parse_agent_card

        assert parse_agent_card(json.loads(json.dumps(card))).capabilities.push_notifications is True
        for skill in card["skills"]:
            assert skill["inputModes"] == skill["input_modes"]
            assert skill["outputModes"] == skill["output_modes"]
        parsed = _strict_parse(_a2a_view(card))  # no unknown field, no wrong shape
        assert parsed.capabilities.push_notifications is True
        assert list(parsed.default_input_modes) == card["default_input_modes"]
        assert list(parsed.default_output_modes) == card["default_output_modes"]
        assert parsed.documentation_url == card["documentationUrl"]
        assert list(parsed.skills[0].input_modes) == card["skills"][0]["input_modes"]
        assert {i.protocol_binding for i in parsed.supported_interfaces} == {"JSONRPC", "HTTP+JSON"}
        assert card_requires_bearer(card) is bearer
        assert bool(parsed.security_requirements) is bearer
        if bearer:
            assert parsed.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"
            assert "bearer" in parsed.security_requirements[0].schemes


async def test_a_bearer_cards_aap_security_block_is_in_seed_003s_example_form(rig: Rig) -> None:
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(HONDA)
        assert dealer is not None
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"public_agent": False}))
    card = (await rig.client.get(f"/dealers/{HONDA}/.well-known/agent-card.json")).json()
    scheme = card["security_schemes"]["bearer"]
    assert {k: scheme[k] for k in ("type", "scheme")} == {"type": "http", "scheme": "bearer"}
    assert isinstance(scheme["bearer_format"], str)
    assert card["security_requirements"] == [{"bearer": []}]
    # The Python a2a-sdk reads the card as served (both spellings; the A2A form comes last and wins).
    from a2a.client.card_resolver import parse_agent_card

    parsed = parse_agent_card(card)
    assert parsed.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"
    assert "bearer" in parsed.security_requirements[0].schemes


async def test_discovery_documents_carry_an_etag_and_answer_304_when_it_matches(rig: Rig) -> None:
    for path in (
        f"/dealers/{TOYOTA}/.well-known/agent-card.json",
        f"/dealers/{TOYOTA}/.well-known/auto-agent-contract.json",
        f"/dealers/{TOYOTA}/.well-known/auto-agent-llm-guide.md",
        "/agent/.well-known/agent-card.json",
    ):
        first = await rig.client.get(path)
        assert first.status_code == 200
        etag = first.headers["etag"]
        assert etag.startswith('"')
        assert first.headers["cache-control"].startswith("public, max-age=")
        again = await rig.client.get(path, headers={"If-None-Match": etag})
        assert again.status_code == 304, path
        assert again.content == b""
        assert again.headers["etag"] == etag
        other = await rig.client.get(path, headers={"If-None-Match": '"something-else"'})
        assert other.status_code == 200
        assert other.content == first.content
