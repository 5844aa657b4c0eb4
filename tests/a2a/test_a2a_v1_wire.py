"""What a strict A2A v1.0 client expects of both bindings, on the gateway agent and a dealer agent:
the JSON-RPC endpoint with a trailing slash, 415 for a body that is not JSON, and a ``ListTasks`` status filter
that names no task state refused instead of ignored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from aap.support import TOYOTA, Rig, build_template, start_rig, stop_rig

A2A = {"A2A-Version": "1.0"}
GATEWAY_RPC = "/agent/a2a/jsonrpc"
DEALER_RPC = f"/dealers/{TOYOTA}/a2a/jsonrpc"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("a2a-wire-template") / "template.db"
    keys = asyncio.run(build_template(path))
    return path, keys


@pytest.fixture
async def rig(template: tuple[Path, dict[str, str]], tmp_path: Path) -> AsyncIterator[Rig]:
    made = await start_rig(template[0], template[1], tmp_path)
    try:
        yield made
    finally:
        await stop_rig(made)


def _auth(rig: Rig) -> dict[str, str]:
    return {**A2A, "Authorization": f"Bearer {rig.keys['crm']}"}


def _list_tasks(status: object = None) -> dict[str, object]:
    params = {} if status is None else {"status": status}
    return {"jsonrpc": "2.0", "id": "l1", "method": "ListTasks", "params": params}


@pytest.mark.parametrize("path", [GATEWAY_RPC, DEALER_RPC])
async def test_the_jsonrpc_endpoint_answers_with_a_trailing_slash_too(rig: Rig, path: str) -> None:
    plain = await rig.client.post(path, json=_list_tasks(), headers=_auth(rig))
    slashed = await rig.client.post(path + "/", json=_list_tasks(), headers=_auth(rig))
    assert plain.status_code == 200
    assert slashed.status_code == 200
    assert "result" in slashed.json()
    assert slashed.json()["result"].keys() == plain.json()["result"].keys()


@pytest.mark.parametrize("prefix", ["/agent/a2a", f"/dealers/{TOYOTA}/a2a"])
async def test_an_http_json_body_that_is_not_json_is_refused_with_415(rig: Rig, prefix: str) -> None:
    body = b'{"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}'
    response = await rig.client.post(
        prefix + "/message:send", content=body, headers={**_auth(rig), "Content-Type": "text/plain"}
    )
    assert response.status_code == 415
    error = response.json()["error"]
    assert error["code"] == 415
    assert error["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"


async def test_http_json_answers_are_application_json(rig: Rig) -> None:
    gateway = await rig.client.get("/agent/a2a/tasks", headers=_auth(rig))
    dealer = await rig.client.get(f"/dealers/{TOYOTA}/a2a/tasks", headers=_auth(rig))
    for response in (gateway, dealer):
        assert response.status_code == 200
        assert response.headers["content-type"].split(";")[0] == "application/json"


@pytest.mark.parametrize("path", [GATEWAY_RPC, DEALER_RPC])
async def test_a_jsonrpc_body_that_is_not_json_is_refused_with_415(rig: Rig, path: str) -> None:
    import json

    response = await rig.client.post(
        path, content=json.dumps(_list_tasks()), headers={**_auth(rig), "Content-Type": "text/plain"}
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == -32005  # ContentTypeNotSupportedError


async def test_list_tasks_with_a_status_that_names_no_task_state_is_an_error_on_both_bindings(rig: Rig) -> None:
    # One task of the caller's exists, so "every task" would not be an empty answer.
    start = {
        "jsonrpc": "2.0",
        "id": "s1",
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": "m-list",
                "role": "ROLE_USER",
                "parts": [{"data": {"action": "inventory.facets", "payload": {"dealership_id": TOYOTA}}}],
            }
        },
    }
    assert "result" in (await rig.client.post(GATEWAY_RPC, json=start, headers=_auth(rig))).json()
    listed = (await rig.client.get("/agent/a2a/tasks", headers=_auth(rig))).json()
    assert listed["tasks"]

    rest = await rig.client.get("/agent/a2a/tasks", params={"status": "INVALID"}, headers=_auth(rig))
    assert rest.status_code == 400
    assert rest.json()["error"]["status"] == "INVALID_ARGUMENT"
    rpc = (await rig.client.post(GATEWAY_RPC, json=_list_tasks("INVALID"), headers=_auth(rig))).json()
    assert rpc["error"]["code"] == -32602
    assert "result" not in rpc

    good = await rig.client.get("/agent/a2a/tasks", params={"status": "TASK_STATE_COMPLETED"}, headers=_auth(rig))
    assert good.status_code == 200
    assert [t["status"]["state"] for t in good.json()["tasks"]] == ["TASK_STATE_COMPLETED"]
    rpc_good = (await rig.client.post(GATEWAY_RPC, json=_list_tasks("TASK_STATE_COMPLETED"), headers=_auth(rig))).json()
    assert len(rpc_good["result"]["tasks"]) == 1


async def test_a_dealer_agents_list_tasks_refuses_an_unknown_status_too(rig: Rig) -> None:
    response = await rig.client.get(f"/dealers/{TOYOTA}/a2a/tasks", params={"status": "NOPE"}, headers=_auth(rig))
    assert response.status_code == 400


async def _rpc(rig: Rig, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid4().hex, "method": method, "params": params}
    answer: dict[str, Any] = (await rig.client.post(GATEWAY_RPC, json=body, headers=_auth(rig))).json()
    return answer


def _send(parts: list[dict[str, Any]], task_id: str = "", context_id: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": uuid4().hex, "role": "ROLE_USER", "parts": parts}
    if task_id:
        message["taskId"] = task_id
    if context_id:
        message["contextId"] = context_id
    return {"message": message}


async def _start_workflow(rig: Rig) -> dict[str, Any]:
    leads = await rig.client.post(
        "/mcp/leads.list",
        json={"payload": {"dealership_id": TOYOTA, "status": "new", "limit": 1}},
        headers=_auth(rig),
    )
    lead = leads.json()["result"]["output"]["items"][0]["id"]
    payload = {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead}}
    started = await _rpc(rig, "SendMessage", _send([{"data": {"action": "workflow.run", "payload": payload}}]))
    task: dict[str, Any] = started["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task


async def _run_status(rig: Rig, run_id: str) -> str:
    got = await rig.client.post(
        "/mcp/workflow.get", json={"payload": {"dealership_id": TOYOTA, "run_id": run_id}}, headers=_auth(rig)
    )
    return str(got.json()["result"]["output"]["status"])


async def test_a_reply_a_waiting_workflow_task_cannot_take_keeps_it_input_required_saying_what_it_expects(
    rig: Rig,
) -> None:
    task = await _start_workflow(rig)
    run_id = task["status"]["message"]["parts"][0]["data"]["run_id"]
    replies = [
        [{"text": "I called them, they are interested."}],  # a text reply
        [{"data": {"data": {"outcome": "teleported"}}}],  # an outcome the user task does not know
    ]
    for parts in replies:
        answered = await _rpc(rig, "SendMessage", _send(parts, task["id"], task["contextId"]))
        again = answered["result"]["task"]
        assert again["id"] == task["id"]
        assert again["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", again["status"]
        note = again["status"]["message"]["parts"][0]["data"]
        assert note["run_id"] == run_id
        assert note["error"]["code"]
        assert "contacted" in note["expected"]  # the outcomes the waiting task takes
        assert note["waiting_tasks"][0]["bpmn_id"] == "first_contact"
        assert await _run_status(rig, run_id) == "input_required"
        fetched = await _rpc(rig, "GetTask", {"id": task["id"]})
        assert fetched["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = await _rpc(rig, "SendMessage", _send([{"data": {"data": {"outcome": "contacted"}}}], task["id"]))
    assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert await _run_status(rig, run_id) == "completed"


async def test_canceling_a_waiting_workflow_task_cancels_its_run(rig: Rig) -> None:
    task = await _start_workflow(rig)
    run_id = task["status"]["message"]["parts"][0]["data"]["run_id"]
    canceled = await _rpc(rig, "CancelTask", {"id": task["id"]})
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert await _run_status(rig, run_id) == "canceled"
    # The run's user task can no longer be completed, through the task or directly.
    late = await rig.client.post(
        "/mcp/workflow.complete_task",
        json={"payload": {"dealership_id": TOYOTA, "run_id": run_id, "task_id": "x", "data": {"outcome": "contacted"}}},
        headers=_auth(rig),
    )
    assert late.json()["status"]["error"]["code"] == "workflow.task_not_waiting"
