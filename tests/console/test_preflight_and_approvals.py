"""Policy pre-flight (console and admin API ``?dry_run=true``) and policy-held calls waiting for approval."""

from __future__ import annotations

import httpx

from console.conftest import csrf_of, sign_in
from gateway.support import MOTOR, TOYOTA, Rig, error_code

DEFAULT_POLICY = f"{MOTOR}-default"


def _client(rig: Rig) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test")


async def test_dry_run_refuses_a_redaction_that_breaks_the_public_agent_and_saves_nothing(rig: Rig) -> None:
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    url = f"/admin/v1/companies/{MOTOR}/policies/{DEFAULT_POLICY}"
    refused = await rig.client.put(url, params={"dry_run": "true"}, json={"redact_fields": ["vin"]}, headers=headers)
    assert refused.status_code == 200
    report = refused.json()
    assert report["ok"] is False
    broken = {b["rule"] for agent in report["agents"] for b in agent["breaks"]}
    assert any(rule.startswith("skill.inventory") for rule in broken)
    harmless = await rig.client.put(
        url, params={"dry_run": "true"}, json={"denied_actions": ["vertex.*"]}, headers=headers
    )
    assert harmless.json()["ok"] is True
    stored = await rig.client.get(f"/admin/v1/companies/{MOTOR}/policies", headers=headers)
    assert all(p["redact_fields"] == [] for p in stored.json()["items"])


async def test_console_policy_save_runs_the_preflight_and_refuses_a_breaking_change(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        page = await client.get("/console/policies")
        form = {
            "csrf": csrf_of(page.text),
            "id": DEFAULT_POLICY,
            "allowed_actions": "*",
            "redact_fields": "vin",
            "allow_side_effects": "on",
            "intent": "save",
        }
        refused = await client.post("/console/policies", data=form)
        assert refused.status_code == 409
        assert "Pre-flight refused this change" in refused.text
        saved = await client.post("/console/policies", data={**form, "redact_fields": "", "denied_actions": "vertex.*"})
        assert saved.status_code == 200
        assert "policy saved" in saved.text
    records = [r for r in await rig.audit(MOTOR) if r.action == "admin.policies.upsert"]
    assert len(records) == 1
    assert records[0].surface == "console"


async def test_a_policy_holds_an_agents_lead_update_to_lost_until_a_person_approves_it(rig: Rig) -> None:
    rule = {"action": "leads.update", "field": "status", "op": "eq", "value": "lost"}
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/policies/{DEFAULT_POLICY}", json={"require_approval": [rule]}, headers=headers
    )
    listing = await rig.call("leads.list", {"dealership_id": TOYOTA, "limit": 5})
    result = listing.json()["result"]
    items = result["output"]["items"]
    lead_id = next(item["id"] for item in items if item["status"] in ("new", "contacted"))
    update = {"dealership_id": TOYOTA, "lead_id": lead_id, "status": "lost"}
    held = await rig.call("leads.update", update)
    assert error_code(held) == "approval.pending"
    again = await rig.call("leads.update", update)
    assert error_code(again) == "approval.pending"
    harmless = await rig.call("leads.update", {**update, "status": "contacted"})
    assert harmless.status_code == 200
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        page = await client.get("/console/approvals")
        assert "leads.update" in page.text
        approval_id = page.text.split("/console/approvals/held/", 1)[1].split('"', 1)[0]
        decided = await client.post(
            f"/console/approvals/held/{approval_id}",
            data={"csrf": csrf_of(page.text), "decision": "approve", "comment": "customer bought elsewhere"},
        )
        assert decided.status_code == 303
    resumed = await rig.call("leads.update", update)
    assert resumed.status_code == 200
    records = [r for r in await rig.audit(MOTOR) if r.action in ("leads.update", "approvals.decide")]
    assert [r.result_class for r in records if r.action == "leads.update"].count("pending") == 2
    assert any(r.action == "approvals.decide" and r.surface == "console" for r in records)


async def test_a_held_aap_lead_from_an_agent_is_an_input_required_task_and_runs_once_approved(rig: Rig) -> None:
    from forecourt.adapters.aap.checker import _valid_request
    from forecourt.adapters.aap.client import DealerAgentClient
    from forecourt.domain.aap_spec import SKILLS_BY_ID

    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/policies/{DEFAULT_POLICY}",
        json={"require_approval": [{"action": "aap.lead.submit"}]},
        headers=headers,
    )
    skill = SKILLS_BY_ID["lead.submit"]
    lead = {**_valid_request(skill, None), "idempotency_key": "console-held-lead-1"}
    agent = DealerAgentClient(f"http://forecourt.test/dealers/{TOYOTA}", token=rig.keys["crm"], http=rig.client)
    held = await agent.send(lead, skill.request_media_type)
    task = held.body["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert not task.get("history")
    note = task["status"]["message"]["parts"][0]["data"]
    assert note["code"] == "approval.pending"
    decided = await rig.call(
        "approvals.decide",
        {"company_id": MOTOR, "approval_id": note["approval_id"], "decision": "approve"},
        key="admin",
    )
    assert decided.status_code == 200, decided.text
    resumed = await agent.send(lead, skill.request_media_type)
    assert resumed.error is None
    assert resumed.payload is not None
    assert resumed.payload["data"]["lead_id"]
