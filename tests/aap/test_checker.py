"""``forecourt aap check``: passes against the demo agent, fails naming the rule against a broken one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from forecourt.adapters.aap.checker import run_check
from forecourt.cli.main import app as cli

from .support import HONDA, TOYOTA, LiveServer, Rig, fixture


def test_aap_check_passes_against_the_demo_dealer_agent(live: LiveServer) -> None:
    result = CliRunner().invoke(cli, ["aap", "check", f"{live.url}/dealers/{TOYOTA}", "--submit-lead"])
    assert result.exit_code == 0, result.output
    assert "RESULT: PASS" in result.output
    assert "skill.lead.submit.response_schema" in result.output
    assert "errors.inventory.search.code" in result.output


def test_aap_check_submits_no_lead_unless_asked_and_reports_the_skip_as_a_skip(live: LiveServer) -> None:
    result = CliRunner().invoke(cli, ["aap", "check", f"{live.url}/dealers/{TOYOTA}"])
    assert result.exit_code == 2, result.output
    assert "[SKIP] skill.lead.submit.valid_request" in result.output
    assert "skipped (no --submit-lead)" in result.output
    assert "skill.lead.submit.response_schema" not in result.output
    assert "RESULT: INCOMPLETE" in result.output
    assert "RESULT: PASS" not in result.output


def test_aap_check_with_allow_skips_passes_when_every_rule_checked_passed(live: LiveServer) -> None:
    result = CliRunner().invoke(cli, ["aap", "check", f"{live.url}/dealers/{TOYOTA}", "--allow-skips"])
    assert result.exit_code == 0, result.output
    assert "[SKIP] skill.lead.submit.valid_request" in result.output
    assert "RESULT: PASS (with skips)" in result.output


def test_aap_check_json_is_the_same_report_as_data_with_the_same_exit_status(live: LiveServer) -> None:
    result = CliRunner().invoke(cli, ["aap", "check", f"{live.url}/dealers/{TOYOTA}", "--json"])
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)
    assert report["result"] == "incomplete"
    verdicts = [(c["rule"], c["verdict"]) for c in report["checks"]]
    assert ("skill.lead.submit.valid_request", "skip") in verdicts
    assert ("errors.inventory.search.code", "pass") in verdicts
    assert report["failed"] == 0
    assert report["skipped"] == sum(v == "skip" for _, v in verdicts) >= 1
    assert report["passed"] == report["checked"] == sum(v == "pass" for _, v in verdicts)


async def test_a_bearer_agent_checked_without_a_token_calls_no_skill_and_is_not_a_pass(rig: Rig) -> None:
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(HONDA)
        assert dealer is not None
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"public_agent": False}))
    report = await run_check(f"{rig.client.base_url}/dealers/{HONDA}", http=rig.client)
    assert report.passed
    assert [c.rule for c in report.skips] == ["skills.called"]
    assert not report.complete()
    assert report.complete(allow_skips=True)
    rendered = report.render()
    assert "[SKIP] skills.called" in rendered
    assert "[PASS] skills.called" not in rendered
    assert "1 skipped" in rendered
    assert "RESULT: INCOMPLETE" in rendered


def _broken_agent() -> Starlette:
    """An agent whose manifest says bearer while its card is public, and whose search offers a sold unit."""

    async def card(request: Request) -> JSONResponse:
        base = str(request.base_url).rstrip("/")
        doc: dict[str, Any] = fixture("agent-card.example.json")
        doc["supported_interfaces"] = [{"url": base + "/rpc", "protocol_binding": "JSONRPC", "protocol_version": "1.0"}]
        doc["capabilities"]["extensions"][0]["params"]["manifest_url"] = base + "/manifest"
        doc["capabilities"]["extensions"][0]["params"]["implemented_skills"] = ["inventory.search"]
        doc["skills"] = [s for s in doc["skills"] if s["id"] == "inventory.search"]
        doc["security_schemes"], doc["security_requirements"] = {}, []
        return JSONResponse(doc)

    async def manifest(request: Request) -> JSONResponse:
        doc = fixture("contract-manifest.example.json")
        doc["a2a"]["skills"] = [s for s in doc["a2a"]["skills"] if s["id"] == "inventory.search"]
        doc["llm"]["guide_url"] = str(request.base_url) + "guide.md"  # no network in tests
        return JSONResponse(doc)  # auth_type "bearer", though the card is public

    async def rpc(request: Request) -> JSONResponse:
        body = await request.json()
        data = fixture("inventory-search-response.example.json")
        data["data"]["vehicles"][0]["status"] = "Sold"
        part = {"data": data, "mediaType": "application/vnd.autoagent.inventory-search-response+json"}
        msg = {"messageId": "x", "role": "ROLE_AGENT", "parts": [part]}
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {"message": msg}})

    return Starlette(
        routes=[
            Route("/.well-known/agent-card.json", card),
            Route("/manifest", manifest),
            Route("/rpc", rpc, methods=["POST"]),
        ]
    )


@pytest.fixture
def broken() -> Iterator[LiveServer]:
    server = LiveServer(_broken_agent()).start()
    try:
        yield server
    finally:
        server.stop()


def test_aap_check_fails_against_a_broken_agent_and_names_the_rules(broken: LiveServer) -> None:
    report = asyncio.run(run_check(broken.url))
    failed = {c.rule for c in report.failures}
    assert not report.passed
    assert "manifest.auth_type_agrees_with_card" in failed
    assert "behaviour.no_sold_vehicle_offered" in failed
    assert "errors.inventory.search.aap_error" in failed  # it accepts an unknown field
    result = CliRunner().invoke(cli, ["aap", "check", broken.url])
    assert result.exit_code == 1
    assert "[FAIL] manifest.auth_type_agrees_with_card" in result.output
