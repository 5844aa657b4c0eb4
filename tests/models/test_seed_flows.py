"""Seed 001 §8 flows A, B and C, sent literally as seed 001 §3 writes the request envelope, answered in the
§3 response envelope: A — embedding.create as ``tool.run`` (vector id + similarity scores), B —
vertex.invokeModel (structured model output, against the fake Vertex), C — workflow.run (status and logs)."""

from __future__ import annotations

from typing import Any

from .support import MOTOR, Rig

AGENT_ID = f"profiles/demo/companies/{MOTOR}/team/crm-agent"
TOYOTA = "demo-toyota-sf"


def envelope(request_id: str, action_type: str, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Seed 001 §3's request, field for field."""
    return {
        "id": request_id,
        "caller": {"agentId": AGENT_ID, "sessionId": "session-1f2e", "traceId": "4bf92f3577b34da6a3ce929d0e0e4736"},
        "action": {"type": action_type, "name": name, "version": "v1"},
        "payload": payload,
        "security": {"auth": {"method": "mcp-api-key"}, "companyContext": {"companyId": MOTOR}},
        "meta": {"priority": "normal", "allowSideEffects": True},
    }


async def _post(rig: Rig, body: dict[str, Any]) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {rig.keys['crm']}"}
    response = await rig.client.post(f"/mcp/{body['action']['name']}", json=body, headers=headers)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    # Seed 001 §3's response envelope.
    assert reply["id"].startswith("mcp-resp:")
    assert reply["inResponseTo"] == body["id"]
    assert reply["status"] == {"code": 200, "message": "OK"}
    assert set(reply["result"]) == {"type", "output", "metadata"}
    assert set(reply["audit"]) == {"processedBy", "durationMs", "trace"}
    assert reply["audit"]["trace"] == body["caller"]["traceId"]
    return reply


async def test_flow_a_create_embedding_as_tool_run_answers_a_vector_id_and_similarity_scores(rig: Rig) -> None:
    payload = {"input": "Do you offer a loaner car during service?", "params": {}}
    first = await _post(rig, envelope("mcp-req:flow-a-1", "tool.run", "embedding.create", payload))
    second = await _post(
        rig,
        envelope("mcp-req:flow-a-2", "tool.run", "embedding.create", {"input": "Is a courtesy car available?"}),
    )
    assert first["result"]["type"] == "model.embedding"
    item = second["result"]["output"]["data"][0]
    assert item["id"].startswith("vec_")
    assert item["stored"] is True
    assert item["similar"][0]["id"] == first["result"]["output"]["data"][0]["id"]
    assert 0.0 < item["similar"][0]["similarity"] <= 1.0


async def test_flow_a_still_accepts_the_catalogue_type_model_invoke(rig: Rig) -> None:
    reply = await _post(rig, envelope("mcp-req:flow-a-3", "model.invoke", "embedding.create", {"input": "hours"}))
    assert reply["result"]["output"]["data"][0]["id"].startswith("vec_")


async def test_flow_b_invoke_vertex_model_answers_structured_model_output(rig: Rig, fakes: Any) -> None:
    payload = {
        "model": "gemini-1.5-pro",
        "input": "Summarize the following doc...",
        "params": {"temperature": 0.0, "maxOutputTokens": 1024},
    }
    reply = await _post(rig, envelope("mcp-req:flow-b-1", "model.invoke", "vertex.invokeModel", payload))
    assert reply["result"]["type"] == "model.textCompletion"
    assert reply["result"]["output"] == fakes.vertex.reply
    assert reply["result"]["metadata"]["model"] == "gemini-1.5-pro"
    assert isinstance(reply["result"]["metadata"]["tokens"], int)
    assert fakes.vertex.requests[-1].body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 1024}


async def test_flow_c_run_workflow_answers_its_status_and_logs(rig: Rig) -> None:
    leads = await _post(
        rig,
        envelope("mcp-req:flow-c-0", "tool.run", "leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": 1}),
    )
    lead_id = leads["result"]["output"]["items"][0]["id"]
    payload = {"workflow_id": "new_lead_follow_up", "dealership_id": TOYOTA, "inputs": {"lead_id": lead_id}}
    reply = await _post(rig, envelope("mcp-req:flow-c-1", "workflow.run", "workflow.run", payload))
    run = reply["result"]["output"]
    assert reply["result"]["type"] == "workflow.run"
    assert run["status"] == "input_required"
    assert run["log"][0]["event"] == "run.started"
    assert run["waiting_tasks"][0]["bpmn_id"] == "first_contact"
