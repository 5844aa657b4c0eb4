"""Policy applies inside workflows; runs are tenant-scoped; ``POST /mcp/workflow.run`` answers in the envelope."""

from __future__ import annotations

from typing import Any

import httpx

from forecourt.bootstrap import create_app
from forecourt.domain.tenancy import Policy

from .conftest import HONDA, MOTOR, TOYOTA, Rig


async def _new_lead(rig: Rig) -> str:
    rig.services.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")
    page = await rig.invoke("leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": 1})
    return str(page["items"][0]["id"])


async def test_a_step_the_caller_lacks_the_scope_for_fails_the_run_with_that_code(rig: Rig) -> None:
    lead_id = await _new_lead(rig)

    run = await rig.invoke(
        "workflow.run",
        {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}},
        key="crm_no_lead_writes",
    )

    assert run["status"] == "failed"
    assert run["error"]["code"] == "auth.insufficient_scope"
    assert run["error"]["task"] == "assign_lead"
    assert run["error"]["operator"] == "leads.update"
    states = {t["bpmn_id"]: t["state"] for t in run["tasks"]}
    assert states["load_lead"] == "completed"
    assert states["assign_lead"] == "error"
    assert ("task.failed", "assign_lead", "auth.insufficient_scope") in [
        (e["event"], e.get("task"), e.get("code")) for e in run["log"]
    ]
    lead = await rig.invoke("leads.get", {"dealership_id": TOYOTA, "lead_id": lead_id})
    assert lead["assigned_to"] is None or lead["assigned_to"] != "bdc-rep-1"


async def test_a_company_policy_denying_an_action_stops_the_workflow_step(rig: Rig) -> None:
    lead_id = await _new_lead(rig)
    policy = Policy(id="no-lead-updates", company_id=MOTOR, name="no lead updates", denied_actions=("leads.update",))
    await rig.invoke(
        "admin.policies.upsert", {"company_id": MOTOR, "policy": policy.model_dump(mode="json")}, key="admin"
    )

    run = await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
    )

    assert run["status"] == "failed"
    assert run["error"]["code"] == "policy.denied"


async def test_workflow_calls_are_audited_as_the_caller(rig: Rig) -> None:
    lead_id = await _new_lead(rig)
    await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
    )
    await rig.services.audit.flush()

    audit = await rig.invoke("admin.audit.list", {"company_id": MOTOR}, key="admin")

    inner = [r for r in audit["items"] if r["surface"] == "workflow"]
    assert {r["action"] for r in inner} >= {"leads.get", "dealer.information", "leads.update"}
    assert {r["member_id"] for r in inner} == {"crm-agent"}


async def test_runs_of_one_rooftop_or_company_are_invisible_to_others(rig: Rig) -> None:
    lead_id = await _new_lead(rig)
    run = await rig.invoke(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}}
    )

    other_rooftop = await rig.error("workflow.get", {"dealership_id": HONDA, "run_id": run["run_id"]})
    other_company = await rig.error("workflow.get", {"run_id": run["run_id"]}, key="bay")

    assert other_rooftop.code == "workflow.run_not_found"
    assert other_company.code == "workflow.run_not_found"


async def test_reading_runs_needs_only_the_read_scope_and_starting_them_the_write_scope(rig: Rig) -> None:
    error = await rig.error(
        "workflow.run", {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {}}, key="bay"
    )
    assert error.code == "auth.tenancy_denied"
    actions = {a.name: a for a in rig.services.catalogue.all()}
    assert actions["workflow.run"].scope == "amcp:workflow:write"
    assert actions["workflow.complete_task"].scope == "amcp:workflow:write"
    assert actions["workflow.get"].scope == "amcp:workflow:read"
    assert actions["workflow.run"].type == "workflow.run"


def _envelope(action: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "mcp-req:1",
        "caller": {"agentId": "profiles/demo/companies/demo-motor-group/team/crm-agent", "sessionId": "s-1"},
        "action": {"type": "workflow.run", "name": action, "version": "v1"},
        "payload": payload,
        "security": {"auth": {"method": "mcp-api-key"}, "companyContext": {"companyId": MOTOR}},
        "meta": {"priority": "normal", "allowSideEffects": True},
    }


async def test_the_rest_envelope_runs_and_completes_a_shipped_workflow(rig: Rig) -> None:
    lead_id = await _new_lead(rig)
    app = create_app(services=rig.services)
    headers = {"Authorization": f"Bearer {rig.keys['crm']}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        started = await client.post(
            "/mcp/workflow.run",
            json=_envelope(
                "workflow.run",
                {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead_id}},
            ),
            headers=headers,
        )
        body = started.json()
        output = body["result"]["output"]
        completed = await client.post(
            "/mcp/workflow.complete_task",
            json=_envelope(
                "workflow.complete_task",
                {
                    "dealership_id": TOYOTA,
                    "run_id": output["run_id"],
                    "task_id": output["waiting_tasks"][0]["task_id"],
                    "data": {"outcome": "contacted"},
                },
            ),
            headers=headers,
        )
        missing = await client.post(
            "/mcp/workflow.get",
            json=_envelope("workflow.get", {"dealership_id": TOYOTA, "run_id": "nope"}),
            headers=headers,
        )

    assert started.status_code == 200
    assert body["inResponseTo"] == "mcp-req:1"
    assert body["status"]["code"] == 200
    assert body["result"]["type"] == "workflow.run"
    metadata = dict(body["result"]["metadata"])
    assert metadata.pop("provenance")["untrusted"] is True  # a run can carry third-party text (docs/security.md)
    assert metadata == {"status": "input_required", "workflow_id": "new_lead_follow_up"}
    assert output["status"] == "input_required"
    assert output["artifacts"]["assignment"]["assigned_to"] == "bdc-rep-1"
    assert completed.status_code == 200
    assert completed.json()["result"]["output"]["status"] == "completed"
    assert missing.status_code == 404
    assert missing.json()["status"]["error"]["code"] == "workflow.run_not_found"
