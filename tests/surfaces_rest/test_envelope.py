"""``POST /mcp/{action}``: the seed-001 envelopes, claim checks and hostile bodies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from forecourt.gateway.base import Outcome
from forecourt.surfaces.envelope import AuditInfo, ResponseEnvelope, Result, Status
from forecourt.surfaces.rest import RestSurface
from gateway.support import BAY, MOTOR, TOYOTA, Rig, agent_id, envelope, error_code

CRM = agent_id(MOTOR, "crm-agent")


async def test_a_call_answers_the_seed_response_envelope_with_exact_field_names(rig: Rig) -> None:
    response = await rig.call(
        "dealer.information",
        {"dealership_id": TOYOTA},
        claim_action="dealer.information",
        agent_id=CRM,
        company=MOTOR,
        request_id="req-42",
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "inResponseTo", "status", "result", "audit"}
    assert body["inResponseTo"] == "req-42"
    assert body["id"]
    assert body["id"] != "req-42"
    assert body["status"] == {"code": 200, "message": "OK"}
    assert set(body["result"]) == {"type", "output", "metadata"}
    assert body["result"]["output"]["id"] == TOYOTA
    assert set(body["audit"]) == {"processedBy", "durationMs", "trace"}
    assert body["audit"]["processedBy"] == "gw-test-1"
    assert isinstance(body["audit"]["durationMs"], float | int)
    assert len(body["audit"]["trace"]) == 32


async def test_an_error_keeps_the_envelope_with_its_code_in_status(rig: Rig) -> None:
    response = await rig.call("inventory.get", {"dealership_id": TOYOTA, "vin": "1HGCM82633A004352"}, request_id="r9")
    assert response.status_code == 404
    body = response.json()
    assert set(body) == {"id", "inResponseTo", "status", "result", "audit"}
    assert body["inResponseTo"] == "r9"
    assert body["result"] is None
    assert body["status"]["code"] == 404
    assert body["status"]["error"]["code"] == "inventory.vehicle_not_found"
    assert body["audit"]["trace"]


async def test_an_agent_id_that_is_not_the_authenticated_member_is_refused(rig: Rig) -> None:
    response = await rig.call("dealer.information", {"dealership_id": TOYOTA}, agent_id=agent_id(MOTOR, "ops-admin"))
    assert (response.status_code, error_code(response)) == (401, "auth.unauthorized")
    assert response.json()["result"] is None


async def test_a_company_context_that_is_not_the_callers_company_is_refused(rig: Rig) -> None:
    response = await rig.call("dealer.information", {"dealership_id": TOYOTA}, company=BAY)
    assert (response.status_code, error_code(response)) == (403, "auth.tenancy_denied")


async def test_an_action_name_that_differs_from_the_url_is_refused(rig: Rig) -> None:
    response = await rig.call("dealer.information", {"dealership_id": TOYOTA}, claim_action="inventory.search")
    assert (response.status_code, error_code(response)) == (400, "invalid_request")


async def test_an_action_type_that_differs_from_the_catalogue_is_refused(rig: Rig) -> None:
    body = envelope({"dealership_id": TOYOTA})
    body["action"] = {"type": "model.invoke", "name": "dealer.information"}
    response = await rig.client.post(
        "/mcp/dealer.information", json=body, headers={"Authorization": f"Bearer {rig.keys['crm']}"}
    )
    assert (response.status_code, error_code(response)) == (422, "invalid_params")


async def test_an_unknown_action_is_action_unknown(rig: Rig) -> None:
    response = await rig.call("inventory.teleport", {"dealership_id": TOYOTA})
    assert (response.status_code, error_code(response)) == (404, "action.unknown")


async def test_an_invalid_payload_names_the_failing_path_and_never_echoes_the_value(rig: Rig) -> None:
    secret_email = "jane.private.person@example.com"
    response = await rig.call(
        "leads.create",
        {"dealership_id": TOYOTA, "customer": {"email": 12345, "first_name": secret_email}, "bogus": secret_email},
    )
    assert (response.status_code, error_code(response)) == (422, "invalid_params")
    errors = response.json()["status"]["error"]["details"]["errors"]
    assert any(e["path"] == "/customer/email" for e in errors)
    assert secret_email not in response.text
    assert "12345" not in response.text


async def test_an_unknown_envelope_field_is_invalid_request(rig: Rig) -> None:
    body = envelope({"dealership_id": TOYOTA})
    body["surprise"] = True
    response = await rig.client.post(
        "/mcp/dealer.information", json=body, headers={"Authorization": f"Bearer {rig.keys['crm']}"}
    )
    assert (response.status_code, error_code(response)) == (400, "invalid_request")


async def test_a_body_over_the_limit_is_413(rig: Rig) -> None:
    body = envelope({"dealership_id": TOYOTA, "make": "x" * 1_100_000})
    response = await rig.client.post(
        "/mcp/inventory.search", json=body, headers={"Authorization": f"Bearer {rig.keys['crm']}"}
    )
    assert (response.status_code, error_code(response)) == (413, "payload_too_large")


async def test_a_streamed_body_over_the_limit_without_content_length_is_413(rig: Rig) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b" " * 65_536

    response = await rig.client.post(
        "/mcp/inventory.search", content=chunks(), headers={"Authorization": f"Bearer {rig.keys['crm']}"}
    )
    assert (response.status_code, error_code(response)) == (413, "payload_too_large")


async def test_a_body_nested_too_deeply_is_400(rig: Rig) -> None:
    deep = "[" * 5000 + "]" * 5000
    raw = f'{{"id": "x", "payload": {{"dealership_id": "{TOYOTA}", "filters": {deep}}}}}'
    response = await rig.client.post(
        "/mcp/inventory.search",
        content=raw.encode(),
        headers={"Authorization": f"Bearer {rig.keys['crm']}", "Content-Type": "application/json"},
    )
    assert (response.status_code, error_code(response)) == (400, "invalid_request")


async def test_a_body_that_is_not_utf8_is_400(rig: Rig) -> None:
    raw = b'{"id": "x", "payload": {"make": "\xff\xfe"}}'
    response = await rig.client.post(
        "/mcp/inventory.search", content=raw, headers={"Authorization": f"Bearer {rig.keys['crm']}"}
    )
    assert (response.status_code, error_code(response)) == (400, "invalid_request")


async def test_a_body_that_is_not_json_is_400(rig: Rig) -> None:
    for raw in (b"id=1&payload=2", b"", b"[1, 2]", b'{"payload": NaN}'):
        response = await rig.client.post(
            "/mcp/inventory.search", content=raw, headers={"Authorization": f"Bearer {rig.keys['crm']}"}
        )
        assert (response.status_code, error_code(response)) == (400, "invalid_request"), raw


async def test_a_malformed_body_still_answers_a_complete_envelope(rig: Rig) -> None:
    response = await rig.client.post("/mcp/inventory.search", content=b"{not json")
    body = response.json()
    assert set(body) == {"id", "inResponseTo", "status", "result", "audit"}
    assert body["inResponseTo"] is None
    assert json.dumps(body)


async def test_a_call_without_credentials_is_401_with_a_bearer_challenge(rig: Rig) -> None:
    response = await rig.call("dealer.information", {"dealership_id": TOYOTA}, key=None)
    assert (response.status_code, error_code(response)) == (401, "auth.unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_an_unexpected_key_that_looks_like_personal_data_is_counted_not_named(rig: Rig) -> None:
    response = await rig.call("inventory.search", {"dealership_id": TOYOTA, "jane.doe@example.com": 1, "colour": "red"})
    assert (response.status_code, error_code(response)) == (422, "invalid_params")
    problem = response.json()["status"]["error"]["details"]["errors"][0]
    assert (problem["unexpected"], problem["unexpected_unnamed"]) == (["colour"], 1)
    assert "jane.doe" not in response.text


def _model_body(surface: RestSurface, request_id: str, outcome: Outcome) -> dict[str, Any]:
    envelope = ResponseEnvelope(
        id="x",
        inResponseTo=request_id,
        status=Status(code=200, message="OK"),
        result=Result(type=outcome.result_type, output=outcome.output, metadata=outcome.metadata),
        audit=AuditInfo(
            processedBy=outcome.processed_by, durationMs=round(outcome.duration_ms, 3), trace=outcome.trace_id
        ),
    )
    body = envelope.model_dump(mode="json")
    body["status"].pop("error")
    return body


@pytest.mark.parametrize("cached", [False, True])
def test_the_envelope_written_from_plain_json_is_the_models_own(cached: bool) -> None:
    surface = RestSurface.__new__(RestSurface)
    output = {"items": [{"id": "v1", "price": {"amount_minor": 2_500_000, "currency": "USD"}, "sold_at": None}]}
    outcome = Outcome(
        action="inventory.search",
        result_type="db.query",
        output=output,
        metadata={"total": 1},
        duration_ms=1.23456,
        trace_id="t" * 32,
        processed_by="gw-1",
        cached=cached,
    )
    for _ in range(2):
        fast = surface._success_bytes("req-1", outcome)
        assert fast is not None
        body = orjson.loads(fast)
        assert list(body) == ["id", "inResponseTo", "status", "result", "audit"]
        assert body["id"].startswith("mcp-resp:")
        assert {**body, "id": "x"} == _model_body(surface, "req-1", outcome)


def test_an_output_that_is_not_plain_json_is_written_by_the_model() -> None:
    surface = RestSurface.__new__(RestSurface)
    odd = Outcome(action="a", result_type="t", output={"at": datetime(2026, 11, 24, tzinfo=UTC)}, cached=True)
    assert surface._success_bytes("r", odd) is None
    huge = Outcome(action="a", result_type="t", output={"n": 2**70})
    assert surface._success_bytes("r", huge) is None


async def test_a_cached_answer_is_the_same_envelope_as_the_first(rig: Rig) -> None:
    first = await rig.call("dealer.information", {"dealership_id": TOYOTA}, request_id="a")
    second = await rig.call("dealer.information", {"dealership_id": TOYOTA}, request_id="b")
    third = await rig.call("dealer.information", {"dealership_id": TOYOTA}, request_id="c")
    assert first.json()["result"] == second.json()["result"] == third.json()["result"]
    assert [r.json()["inResponseTo"] for r in (first, second, third)] == ["a", "b", "c"]
    assert len({r.json()["id"] for r in (first, second, third)}) == 3
