"""model.invoke falls back to the next runtime in the member's modelAffinity / company order when its runtime fails
(timeout, 5xx, credentials.unavailable) and the company's models settings allow it; the answer and the audit trail
say which runtime answered."""

from __future__ import annotations

import pytest

from fakes.anthropic import anthropic_error
from fakes.huggingface import tgi_error
from forecourt.errors import ForecourtError

from .support import MOTOR, Rig

HF, CLAUDE = "meta-llama/Llama-3.1-8B-Instruct", "claude-haiku-4-5"
"""Runtimes whose test timeouts (30 s) leave room for their SDK's first import on a loaded machine."""


async def allow_fallback(rig: Rig, **extra: object) -> None:
    config = {"fallback": True, **extra}
    await rig.operator("admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "models", "config": config})


async def prefer(rig: Rig, *models: str) -> None:
    members = (await rig.operator("admin.members.list", {"company_id": MOTOR})).output["items"]
    crm = next(m for m in members if m["id"] == "crm-agent")
    prefs = {"agentConfig": {"modelAffinity": list(models)}}
    await rig.operator("admin.members.upsert", {"company_id": MOTOR, "member": {**crm, "agent_config": prefs}})


async def records_of(rig: Rig, trace_id: str) -> list[tuple[str, int, str | None]]:
    assert await rig.services.audit.flush()
    async with rig.services.store.transaction() as uow:
        page = await uow.audit.page(MOTOR, limit=500)
    return sorted((r.action, r.status_code, r.error_code) for r in page if r.trace_id == trace_id)


async def test_a_runtime_answering_5xx_falls_back_to_the_next_preferred_runtime(rig, fakes):
    await allow_fallback(rig)
    await prefer(rig, HF, CLAUDE)
    fakes.huggingface.faults.fail(503, tgi_error(503))
    outcome = await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert outcome.output == fakes.anthropic.reply
    route = outcome.metadata["route"]
    assert (route["runtime"], route["model"]) == ("anthropic", CLAUDE)
    assert route["fallback_from"] == [{"runtime": "huggingface", "model": HF, "code": "upstream.unavailable"}]
    assert sorted(await records_of(rig, outcome.trace_id)) == [
        ("anthropic.invokeModel", 200, None),
        ("huggingface.invokeModel", 503, "upstream.unavailable"),
        ("model.invoke", 200, None),
    ]


async def test_a_runtime_that_times_out_falls_back(rig, fakes):
    await allow_fallback(rig)
    await prefer(rig, "gemini-1.5-flash", CLAUDE)
    await rig.operator(
        "admin.adapters.upsert", {"company_id": MOTOR, "adapter_id": "vertex", "config": {"timeout_s": 0.5}}
    )
    fakes.vertex.faults.hang = True
    outcome = await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert outcome.metadata["route"]["runtime"] == "anthropic"
    assert outcome.metadata["route"]["fallback_from"][0]["code"] == "timeout"


async def test_a_runtime_without_its_credential_falls_back(rig, fakes, monkeypatch):
    await allow_fallback(rig)
    await prefer(rig, CLAUDE, HF)
    monkeypatch.delenv("FC_TEST_ANTHROPIC_API_KEY")
    outcome = await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert (outcome.metadata["route"]["runtime"], outcome.output) == ("huggingface", fakes.huggingface.reply)
    assert outcome.metadata["route"]["fallback_from"][0] == {
        "runtime": "anthropic",
        "model": "claude-haiku-4-5",
        "code": "credentials.unavailable",
    }
    assert fakes.anthropic.requests == []


async def test_only_the_companys_consent_turns_a_failure_into_a_fallback(rig, fakes):
    await prefer(rig, HF, CLAUDE)
    fakes.huggingface.faults.fail(503, tgi_error(503))
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert info.value.code == "upstream.unavailable"
    assert fakes.anthropic.requests == []
    await allow_fallback(rig)
    fakes.huggingface.faults.fail(503, tgi_error(503))
    outcome = await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert outcome.metadata["route"]["runtime"] == "anthropic"


async def test_a_rejected_request_is_not_retried_elsewhere_but_an_unavailable_runtime_is(rig, fakes):
    await allow_fallback(rig)
    await prefer(rig, HF, CLAUDE)
    fakes.huggingface.faults.fail(422, tgi_error(422))
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert info.value.code == "models.request_rejected"
    assert fakes.anthropic.requests == []
    fakes.huggingface.faults.fail(500, tgi_error(500))
    outcome = await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert (outcome.metadata["route"]["runtime"], outcome.output) == ("anthropic", fakes.anthropic.reply)


async def test_when_every_runtime_fails_the_last_error_names_what_was_tried(rig, fakes):
    await allow_fallback(rig, fallback_on=["upstream.unavailable"])
    await prefer(rig, HF, CLAUDE)
    fakes.huggingface.faults.fail(503, tgi_error(503))
    fakes.anthropic.faults.fail(529, anthropic_error(529))
    await rig.operator(
        "admin.policies.upsert",
        {"company_id": MOTOR, "policy": {"id": f"{MOTOR}-default", "allowed_models": ["meta-llama/*", "claude-*"]}},
    )
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("model.invoke", {"input": "Draft a reply"})
    assert info.value.code == "upstream.unavailable"
    assert info.value.details["tried"] == ["huggingface", "anthropic"]


def _mcp_call(name: str, arguments: dict[str, object]) -> dict[str, object]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "fallback-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }


async def test_a_fallbacks_audit_record_names_the_runtime_that_answered_on_every_door(rig, fakes):
    await allow_fallback(rig)
    await prefer(rig, HF, CLAUDE)
    payload = {"input": "Draft a reply"}
    auth = {"Authorization": f"Bearer {rig.keys['crm']}"}
    fakes.huggingface.faults.fail(503, tgi_error(503))
    rest = await rig.rest("model.invoke", payload)
    fakes.huggingface.faults.fail(503, tgi_error(503))
    mcp = await rig.client.post(
        "/mcp",
        json=_mcp_call("model.invoke", payload),
        headers={
            **auth,
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "model.invoke",
            "Host": "127.0.0.1",
        },
    )
    fakes.huggingface.faults.fail(503, tgi_error(503))
    part = {"data": {"action": "model.invoke", "payload": payload}, "mediaType": "application/json"}
    a2a = await rig.client.post(
        "/agent/a2a/message:send",
        json={"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [part]}},
        headers={**auth, "A2A-Version": "1.0"},
    )
    assert (rest.status_code, mcp.status_code, a2a.status_code) == (200, 200, 200), (mcp.text, a2a.text)
    assert await rig.services.audit.flush()
    async with rig.services.store.transaction() as uow:
        records = [r for r in await uow.audit.page(MOTOR, limit=500) if r.action == "model.invoke"]
    served = {r.surface: r.args_redacted.get("_served_by") for r in records}
    answered = {"runtime": "anthropic", "model": CLAUDE, "fallback_from": ["huggingface"]}
    assert served == {"rest": answered, "mcp": answered, "a2a": answered}
    assert "input" not in str(served)  # the note names runtimes, never the prompt


async def test_a_direct_runtime_calls_audit_record_names_that_runtime_and_its_model(rig, fakes):
    outcome = await rig.invoke("anthropic.invokeModel", {"input": "Draft a reply", "model": CLAUDE})
    assert await rig.services.audit.flush()
    async with rig.services.store.transaction() as uow:
        page = await uow.audit.page(MOTOR, limit=500)
    record = next(r for r in page if r.trace_id == outcome.trace_id)
    assert record.args_redacted["_served_by"] == {"runtime": "anthropic", "model": CLAUDE}
