"""A policy's ``require_approval`` names an action, not a kind of caller: dropping the key never skips it."""

from __future__ import annotations

from typing import Any

from forecourt.gateway.base import Invocation, Principal

from .support import HEADERS, MOTOR, TOYOTA, Rig, fixture

RPC = f"/dealers/{TOYOTA}/a2a/jsonrpc"
OPERATOR = Principal(method="internal", company_id=MOTOR, member_id=None, subject="operator")


async def _as_operator(rig: Rig, action: str, payload: dict[str, Any]) -> Any:
    outcome = await rig.services.gateway.invoke(
        Invocation(action=action, payload=payload, surface="cli", principal=OPERATOR)
    )
    return outcome.output


async def _send_lead(rig: Rig, key: str | None, email: str) -> dict[str, Any]:
    lead = fixture("lead-submit-request.minimal.example.json")
    lead["customer"]["email"] = email
    headers = dict(HEADERS)
    if key is not None:
        headers["Authorization"] = f"Bearer {rig.keys[key]}"
    message = {
        "messageId": f"lead-{email}",
        "role": "ROLE_USER",
        "parts": [{"data": lead, "mediaType": "application/vnd.aap.lead.submit.request+json"}],
    }
    body = {"jsonrpc": "2.0", "id": "send-1", "method": "SendMessage", "params": {"message": message}}
    return dict((await rig.client.post(RPC, json=body, headers=headers)).json())


async def test_a_lead_rule_holds_an_anonymous_shoppers_lead_like_a_keyed_one_and_it_runs_once_approved(
    rig: Rig,
) -> None:
    policy = {"id": f"{MOTOR}-hold-leads", "name": "hold-leads", "require_approval": [{"action": "aap.lead.submit"}]}
    await _as_operator(rig, "admin.policies.upsert", {"company_id": MOTOR, "policy": policy})
    keyed = await _send_lead(rig, "shopper", "keyed.buyer@example.com")
    anonymous = await _send_lead(rig, None, "anonymous.buyer@example.com")
    for answer in (keyed, anonymous):
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", answer
    note = anonymous["result"]["task"]["status"]["message"]["parts"][0]["data"]
    listed = await _as_operator(rig, "approvals.list", {"company_id": MOTOR, "status": "pending"})
    held = {item["id"]: item for item in listed["items"]}
    assert note["approval_id"] in held
    assert held[note["approval_id"]]["action"] == "aap.lead.submit"
    decided = await _as_operator(
        rig, "approvals.decide", {"company_id": MOTOR, "approval_id": note["approval_id"], "decision": "approve"}
    )
    assert decided["ran"] is True
    assert decided["outcome"] == "ok"
    async with rig.services.store.read() as uow:
        found = await uow.customers.find_by_contact(TOYOTA, "anonymous.buyer@example.com", None)
    assert found is not None
