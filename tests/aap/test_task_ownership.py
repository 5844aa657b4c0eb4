"""A dealer agent's tasks and push configs belong to the caller that created them, not to the rooftop.

A lead held for a person's approval answers an ``input-required`` Task (with its ``approval_id``). Only the
key's member that sent it may read it, list it, manage its push configs; nobody may cancel it, and a refused
cancel changes nothing. An anonymous shopper's task is answered in the response and unreachable afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest

from forecourt.gateway.base import Invocation, Principal

from .support import HEADERS, MOTOR, TOYOTA, Rig, fixture

RPC = f"/dealers/{TOYOTA}/a2a/jsonrpc"
REST = f"/dealers/{TOYOTA}/a2a"
HOOK = {"url": "https://buyer.example/hooks/lead", "token": "owner-secret-token"}
NOT_FOUND = -32001
NOT_CANCELABLE = -32002


async def _hold_leads(rig: Rig) -> None:
    """A company policy that holds every AAP lead for a person's approval."""
    operator = Principal(method="internal", company_id=MOTOR, member_id=None, subject="operator")
    policy = {"id": f"{MOTOR}-hold-leads", "name": "hold-leads", "require_approval": [{"action": "aap.lead.submit"}]}
    await rig.services.gateway.invoke(
        Invocation(
            action="admin.policies.upsert",
            payload={"company_id": MOTOR, "policy": policy},
            surface="cli",
            principal=operator,
        )
    )


async def _rpc(rig: Rig, method: str, params: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    headers = dict(HEADERS)
    if key is not None:
        headers["Authorization"] = f"Bearer {rig.keys.get(key, key)}"
    body = {"jsonrpc": "2.0", "id": "t-1", "method": method, "params": params}
    response = await rig.client.post(RPC, json=body, headers=headers)
    return dict(response.json())


async def _held_task(rig: Rig, key: str | None) -> dict[str, Any]:
    """Send a lead that the policy holds; the input-required Task it answers."""
    lead = fixture("lead-submit-request.minimal.example.json")
    headers = dict(HEADERS)
    if key is not None:
        headers["Authorization"] = f"Bearer {rig.keys[key]}"
    message = {
        "messageId": "lead-1",
        "role": "ROLE_USER",
        "parts": [{"data": lead, "mediaType": "application/vnd.aap.lead.submit.request+json"}],
    }
    params = {"message": message, "configuration": {"taskPushNotificationConfig": HOOK}}
    body = {"jsonrpc": "2.0", "id": "send-1", "method": "SendMessage", "params": params}
    response = (await rig.client.post(RPC, json=body, headers=headers)).json()
    task = response["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return dict(task)


def _code(answer: dict[str, Any]) -> int | None:
    error = answer.get("error")
    return error.get("code") if isinstance(error, dict) else None


@pytest.mark.parametrize("intruder", [None, "crm"])
async def test_another_caller_cannot_list_read_cancel_or_reconfigure_a_held_lead_task(
    rig: Rig, intruder: str | None
) -> None:
    await _hold_leads(rig)
    task = await _held_task(rig, "shopper")
    task_id = task["id"]
    listed = await _rpc(rig, "ListTasks", {}, key=intruder)
    assert task_id not in [t["id"] for t in listed.get("result", {}).get("tasks", [])]
    assert _code(await _rpc(rig, "GetTask", {"id": task_id}, key=intruder)) == NOT_FOUND
    assert _code(await _rpc(rig, "CancelTask", {"id": task_id}, key=intruder)) == NOT_FOUND
    configs = await _rpc(rig, "ListTaskPushNotificationConfigs", {"taskId": task_id}, key=intruder)
    assert _code(configs) == NOT_FOUND
    assert "owner-secret-token" not in str(configs)
    theirs = {"taskId": task_id, "url": "https://intruder.example/hook"}
    assert _code(await _rpc(rig, "CreateTaskPushNotificationConfig", theirs, key=intruder)) == NOT_FOUND
    owners = await _rpc(rig, "GetTask", {"id": task_id}, key="shopper")
    assert owners["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    kept = await _rpc(rig, "ListTaskPushNotificationConfigs", {"taskId": task_id}, key="shopper")
    assert [c["url"] for c in kept["result"]["configs"]] == [HOOK["url"]]


async def test_the_owner_reads_its_held_lead_task_and_a_refused_cancel_changes_nothing(rig: Rig) -> None:
    await _hold_leads(rig)
    task_id = (await _held_task(rig, "shopper"))["id"]
    listed = await _rpc(rig, "ListTasks", {}, key="shopper")
    assert task_id in [t["id"] for t in listed["result"]["tasks"]]
    assert _code(await _rpc(rig, "CancelTask", {"id": task_id}, key="shopper")) == NOT_CANCELABLE
    after = await _rpc(rig, "GetTask", {"id": task_id}, key="shopper")
    assert after["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    note = after["result"]["status"]["message"]["parts"][0]["data"]
    assert note["type"] == "approval.pending"
    assert note["approval_id"]


async def test_an_anonymous_shoppers_push_config_is_delivered_but_no_later_call_can_reach_it(rig: Rig) -> None:
    import sqlalchemy as sa

    lead = fixture("lead-submit-request.minimal.example.json")
    message = {
        "messageId": "lead-anon",
        "role": "ROLE_USER",
        "parts": [{"data": lead, "mediaType": "application/vnd.aap.lead.submit.request+json"}],
    }
    params = {"message": message, "configuration": {"taskPushNotificationConfig": HOOK}}
    body = {"jsonrpc": "2.0", "id": "send-1", "method": "SendMessage", "params": params}
    sent = (await rig.client.post(RPC, json=body, headers=HEADERS)).json()
    assert sent["result"]["message"]["parts"][0]["data"]["data"]["status"] == "received"
    async with rig.services.store.engine.connect() as conn:  # type: ignore[attr-defined]
        rows = (await conn.execute(sa.text("SELECT task_id, owner FROM a2a_push_configs"))).all()
    assert len(rows) == 1
    task_id, owner = rows[0]
    assert owner.startswith("anonymous:")
    assert owner not in (TOYOTA, "-")
    for key in (None, "shopper", "crm"):
        configs = await _rpc(rig, "ListTaskPushNotificationConfigs", {"taskId": task_id}, key=key)
        assert _code(configs) == NOT_FOUND
        assert "owner-secret-token" not in str(configs)
    dispatch = await rig.services.aap.push_store.get_info_for_dispatch(task_id)
    assert [c.url for c in dispatch] == [HOOK["url"]]


async def test_a_credential_that_does_not_authenticate_is_refused_before_any_task_is_read(rig: Rig) -> None:
    answer = await _rpc(rig, "ListTasks", {}, key="fc_live_not-a-real-key")
    assert answer["error"]["data"]["code"] == "AUTH_REQUIRED"
    response = await rig.client.get(f"{REST}/tasks", headers={**HEADERS, "Authorization": "Bearer nonsense"})
    assert response.status_code == 401


def test_the_dealer_agents_and_the_gateway_agent_resolve_task_owners_by_one_rule(rig: Rig) -> None:
    from forecourt.surfaces.a2a.owners import task_owner

    aap = rig.services.aap
    assert aap.task_store.inner._impl.owner_resolver is task_owner  # type: ignore[attr-defined]
    assert aap.push_store.owner_resolver is task_owner  # type: ignore[attr-defined]
    from forecourt.surfaces.a2a import tasks_agent

    assert tasks_agent.task_owner is task_owner
