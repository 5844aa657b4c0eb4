"""Policy pre-flight (console and admin API ``?dry_run=true``) and policy-held calls waiting for approval."""

from __future__ import annotations

from typing import Any

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


async def test_dry_run_shows_the_tools_a_policys_toolsets_would_stop_offering_each_member(rig: Rig) -> None:
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    url = f"/admin/v1/companies/{MOTOR}/policies/{DEFAULT_POLICY}"
    report = await rig.client.put(url, params={"dry_run": "true"}, json={"toolsets": ["service"]}, headers=headers)
    members = {m["member_id"]: m for m in report.json()["members"]}
    crm = members["crm-agent"]
    assert "leads.update" in crm["unlisted"]  # the crm toolset's leads tools are not in the service toolset
    assert "leads.update" not in crm["lost"]  # still callable: a toolset shapes what is offered, not permitted
    assert "service.book_appointment" not in crm["unlisted"]
    assert crm["listed"] < crm["tools"]


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


async def _hold_lead_update(rig: Rig, **extra: Any) -> tuple[str, dict[str, Any], str]:
    """Require approval for ``leads.update`` to lost; an agent's update is held. (lead id, update, approval id)"""
    rule = {"action": "leads.update", "field": "status", "op": "eq", "value": "lost"}
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/policies/{DEFAULT_POLICY}", json={"require_approval": [rule]}, headers=headers
    )
    listing = await rig.call("leads.list", {"dealership_id": TOYOTA, "limit": 5})
    items = listing.json()["result"]["output"]["items"]
    lead_id = next(item["id"] for item in items if item["status"] in ("new", "contacted"))
    update = {"dealership_id": TOYOTA, "lead_id": lead_id, "status": "lost"}
    held = await rig.call("leads.update", update, **extra)
    assert error_code(held) == "approval.pending"
    assert held.json()["status"]["error"]["retryable"] is False
    return lead_id, update, held.json()["status"]["error"]["details"]["approval_id"]


async def _lead_status(rig: Rig, lead_id: str, key: str = "crm") -> str:
    found = await rig.call("leads.get", {"dealership_id": TOYOTA, "lead_id": lead_id}, key=key)
    return str(found.json()["result"]["output"]["status"])


async def test_a_policy_holds_an_agents_lead_update_to_lost_and_runs_it_as_soon_as_a_person_approves(
    rig: Rig,
) -> None:
    lead_id, update, approval_id = await _hold_lead_update(rig)
    again = await rig.call("leads.update", update)
    assert error_code(again) == "approval.pending"
    assert again.json()["status"]["error"]["details"]["approval_id"] == approval_id
    harmless = await rig.call("leads.update", {**update, "status": "contacted"})
    assert harmless.status_code == 200
    waiting = await rig.call("approvals.get", {"approval_id": approval_id})
    assert waiting.json()["result"]["output"]["status"] == "pending"
    assert waiting.json()["result"]["output"]["result"] is None
    async with _client(rig) as client:
        await sign_in(client, rig.keys["admin"])
        page = await client.get("/console/approvals")
        assert "leads.update" in page.text
        assert approval_id == page.text.split("/console/approvals/held/", 1)[1].split('"', 1)[0]
        decided = await client.post(
            f"/console/approvals/held/{approval_id}",
            data={"csrf": csrf_of(page.text), "decision": "approve", "comment": "customer bought elsewhere"},
        )
        assert decided.status_code == 303
    # The agent sends nothing again: the update ran on approval and its answer waits in approvals.get.
    assert await _lead_status(rig, lead_id) == "lost"
    done = (await rig.call("approvals.get", {"approval_id": approval_id})).json()["result"]["output"]
    assert done["status"] == "used"
    assert done["result"]["output"]["status"] == "lost"
    assert done["ran_at"] is not None
    records = [r for r in await rig.audit(MOTOR) if r.action in ("leads.update", "approvals.decide")]
    updates = [r for r in records if r.action == "leads.update"]
    assert [r.result_class for r in updates].count("pending") == 2
    ran = [r for r in updates if r.result_class == "ok" and r.args_redacted.get("status") == "lost"]
    assert len(ran) == 1
    assert ran[0].surface == "rest"
    assert ran[0].member_id == updates[0].member_id
    assert any(r.action == "approvals.decide" and r.surface == "console" for r in records)
    # The same update sent again is a new call: it waits for its own approval.
    fresh = await rig.call("leads.update", update)
    assert error_code(fresh) == "approval.pending"
    assert fresh.json()["status"]["error"]["details"]["approval_id"] != approval_id


async def test_a_retry_with_the_idempotency_key_of_a_call_that_ran_on_approval_gets_its_answer(rig: Rig) -> None:
    key = {"Idempotency-Key": "held-update-1"}
    _lead_id, update, approval_id = await _hold_lead_update(rig, headers=key)
    decided = await rig.call(
        "approvals.decide", {"company_id": MOTOR, "approval_id": approval_id, "decision": "approve"}, key="admin"
    )
    assert decided.json()["result"]["output"] == {
        "id": approval_id,
        "status": "used",
        "decided_by": decided.json()["result"]["output"]["decided_by"],
        "ran": True,
        "outcome": "ok",
    }
    retried = await rig.call("leads.update", update, headers=key)
    assert retried.status_code == 200, retried.text
    assert retried.json()["result"]["output"]["status"] == "lost"
    assert retried.headers["Idempotent-Replayed"] == "true"


async def test_an_approved_call_does_not_run_when_the_key_that_made_it_was_revoked_since(rig: Rig) -> None:
    lead_id, _update, approval_id = await _hold_lead_update(rig)
    crm = next(k for k in await rig.gateway_keys(MOTOR) if k.prefix in rig.keys["crm"])
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    revoked = await rig.client.delete(f"/admin/v1/companies/{MOTOR}/keys/{crm.prefix}", headers=headers)
    assert revoked.status_code in (200, 204), revoked.text
    decided = await rig.call(
        "approvals.decide", {"company_id": MOTOR, "approval_id": approval_id, "decision": "approve"}, key="admin"
    )
    assert decided.json()["result"]["output"]["outcome"] == "auth.unauthorized"
    assert await _lead_status(rig, lead_id, key="admin") != "lost"
    listed = await rig.call("approvals.list", {"company_id": MOTOR}, key="admin")
    item = next(i for i in listed.json()["result"]["output"]["items"] if i["id"] == approval_id)
    assert item["status"] == "used"
    assert item["outcome"] == "auth.unauthorized"
    assert "held" not in item
    assert "result" not in item


async def test_an_approved_call_runs_with_no_more_than_the_member_holds_when_it_is_approved(rig: Rig) -> None:
    lead_id, _update, approval_id = await _hold_lead_update(rig)
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    members = await rig.client.get(f"/admin/v1/companies/{MOTOR}/members", headers=headers)
    crm = next(m for m in members.json()["items"] if m["id"] == "crm-agent")
    narrowed = {**crm, "scopes": [s for s in crm["scopes"] if s != "amcp:leads:write"]}
    saved = await rig.client.put(f"/admin/v1/companies/{MOTOR}/members/crm-agent", json=narrowed, headers=headers)
    assert saved.status_code == 200, saved.text
    decided = await rig.call(
        "approvals.decide", {"company_id": MOTOR, "approval_id": approval_id, "decision": "approve"}, key="admin"
    )
    assert decided.json()["result"]["output"]["outcome"] == "auth.insufficient_scope"
    assert await _lead_status(rig, lead_id, key="admin") != "lost"


async def test_a_rejected_call_never_runs_and_its_held_input_is_erased(rig: Rig) -> None:
    lead_id, update, approval_id = await _hold_lead_update(rig)
    decided = await rig.call(
        "approvals.decide",
        {"company_id": MOTOR, "approval_id": approval_id, "decision": "reject", "comment": "keep working it"},
        key="admin",
    )
    assert decided.json()["result"]["output"]["status"] == "rejected"
    assert await _lead_status(rig, lead_id) != "lost"
    from forecourt.store.console import get_approval

    stored = await get_approval(rig.services.store, approval_id)
    assert stored is not None
    assert stored.held is None
    assert stored.result is None
    rejected = await rig.call("leads.update", update)
    assert error_code(rejected) == "approval.rejected"


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
