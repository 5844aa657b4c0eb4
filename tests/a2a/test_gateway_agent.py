"""The gateway agent over A2A with the real a2a-sdk client on a socket: tasks, streaming, resubscribe, cancel,
push notifications, and Agent A → A2A → Agent B → gateway → adapter with two Forecourt servers."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, new_data_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import A2AError

from aap.support import MOTOR, TOYOTA, LiveServer, build_template, settings_for, wait_for
from fakes.webhook import Webhook
from forecourt.bootstrap import create_app
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.store import open_store_url
from forecourt.surfaces.a2a.push import SIGNATURE_HEADER, verify

BINDINGS = ["JSONRPC", "HTTP+JSON"]
CARD = "/agent/.well-known/agent-card.json"


@dataclass
class Agent:
    """A Forecourt server on loopback and the API keys of its demo members."""

    server: LiveServer
    keys: dict[str, str]
    jobs: Any = None
    db: Path | None = None

    @property
    def card_url(self) -> str:
        return self.server.url + CARD


async def _extra_key(db: Path, company: str, member: str) -> str:
    store = open_store_url(f"sqlite+aiosqlite:///{db}")
    try:
        service = ApiKeyService.from_settings(settings_for(db), store, MemoryRevocationList())
        return (await service.create(company, member, name=f"{member}-2")).key
    finally:
        await store.close()


class FakeJobs:
    """A job runtime that keeps its jobs to itself: ``jobs.demo.create`` queues a job, each ``jobs.demo.get`` moves
    it on one state (queued → running → succeeded, or failed for a job created with ``fail``), ``jobs.demo.cancel``
    cancels it; a job created with ``hold`` stays running."""

    id = "fake-jobs"

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}
        self.canceled: list[str] = []

    async def execute(self, payload: Any, context: Any) -> Any:
        from forecourt.contract import AdapterResult

        verb = context.action.name.rsplit(".", 1)[1]
        if verb == "create":
            job = {
                "job_id": f"job-{len(self.jobs) + 1}",
                "state": "queued",
                "hold": bool(payload.get("hold")),
                "fail": bool(payload.get("fail")),
            }
            self.jobs[job["job_id"]] = job
        else:
            job = self.jobs[payload["job_id"]]
            if verb == "cancel":
                job["state"] = "cancelled"
                self.canceled.append(job["job_id"])
            elif job["state"] == "queued":
                job["state"] = "running"
            elif job["state"] == "running" and not job["hold"]:
                job["state"] = "failed" if job["fail"] else "succeeded"
        view = {"job_id": job["job_id"], "state": job["state"]}
        return AdapterResult(output=view, result_type="model.job")


def _job_actions(jobs: FakeJobs) -> list[Any]:
    from forecourt.contract import Action

    schema = {"type": "object"}
    return [
        Action(
            name=f"jobs.demo.{verb}",
            type="model.invoke",
            title=verb,
            description=f"{verb} a demo job",
            input_schema=schema,
            output_schema=None,
            adapter=jobs.id,
            scope="amcp:models:write" if verb != "get" else "amcp:models:read",
            side_effect=verb != "get",
            dealer_scoped=False,
        )
        for verb in ("create", "get", "cancel")
    ]


def _start(directory: Path, template: Path, keys: dict[str, str], **overrides: Any) -> Agent:
    db = directory / "forecourt.db"
    shutil.copyfile(template, db)
    keys = {
        **keys,
        "bay": asyncio.run(_extra_key(db, "demo-bay-autos", "bay-crm-agent")),
        "admin": asyncio.run(_extra_key(db, MOTOR, "ops-admin")),
    }
    app = create_app(settings_for(db, **overrides))
    jobs = FakeJobs()
    catalogue = app.state.services.catalogue
    for action in _job_actions(jobs):
        catalogue.add(action)
    catalogue.add_adapter(jobs)
    agent = Agent(LiveServer(app).start(), keys)
    agent.jobs = jobs
    agent.db = db
    return agent


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The demo database with API keys, built once for the module."""
    path = tmp_path_factory.mktemp("gateway-agent-template") / "template.db"
    keys = asyncio.run(build_template(path))
    return path, keys


@pytest.fixture(scope="module")
def agent_b(tmp_path_factory: pytest.TempPathFactory, template: tuple[Path, dict[str, str]]) -> Iterator[Agent]:
    """Agent B: a Forecourt server whose gateway agent runs the tasks."""
    agent = _start(tmp_path_factory.mktemp("agent-b"), *template)
    try:
        yield agent
    finally:
        agent.server.stop()


@pytest.fixture(autouse=True)
def fast_job_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poll model jobs every 10 ms instead of every 2 s."""
    monkeypatch.setattr("forecourt.surfaces.a2a.task_executor.JOB_POLL_S", 0.01)


@pytest.fixture
async def http(agent_b: Agent) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client carrying the crm-agent's key."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {agent_b.keys['crm']}"}, timeout=30) as client:
        yield client


async def _client(http: httpx.AsyncClient, agent: Agent, binding: str, *, streaming: bool = False) -> Any:
    config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding])
    return await ClientFactory(config).create_from_url(agent.server.url + "/agent")


def _message(data: dict[str, Any], task_id: str = "", context_id: str = "") -> Message:
    return Message(
        message_id=uuid4().hex,
        role=Role.ROLE_USER,
        parts=[new_data_part(data, media_type="application/json")],
        task_id=task_id,
        context_id=context_id,
    )


async def _send(client: Any, data: dict[str, Any], **kwargs: Any) -> list[StreamResponse]:
    config = kwargs.pop("configuration", None)
    request = SendMessageRequest(message=_message(data, **kwargs), configuration=config)
    return [event async for event in client.send_message(request)]


def _task(events: list[StreamResponse]) -> Task:
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


def _artifact(task: Task, name: str) -> list[Any]:
    return [d for a in task.artifacts if a.name == name for d in get_data_parts(list(a.parts))]


async def _new_lead(http: httpx.AsyncClient, agent: Agent) -> str:
    body = {"payload": {"dealership_id": TOYOTA, "status": "new", "limit": 1}}
    response = await http.post(agent.server.url + "/mcp/leads.list", json=body)
    return str(response.json()["result"]["output"]["items"][0]["id"])


async def _workflow(http: httpx.AsyncClient, agent: Agent) -> dict[str, Any]:
    lead = await _new_lead(http, agent)
    inputs = {"lead_id": lead, "bdc_reps": ["bdc-rep-1"]}
    return {
        "action": "workflow.run",
        "payload": {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": inputs},
    }


async def test_the_gateway_agents_card_tells_the_truth_about_streaming_and_push(agent_b: Agent) -> None:
    async with httpx.AsyncClient() as http:
        card = (await http.get(agent_b.card_url)).json()
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True}
    bindings = {i["protocolBinding"] for i in card["supportedInterfaces"]}
    assert bindings == {"JSONRPC", "HTTP+JSON"}


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_action_runs_as_a_task_that_completes_with_its_result(
    agent_b: Agent, http: httpx.AsyncClient, binding: str
) -> None:
    client = await _client(http, agent_b, binding)
    try:
        payload = {"query": "Do you offer loaner cars?", "dealership_id": TOYOTA, "k": 2}
        task = _task(
            await _send(client, {"action": {"type": "tool.run", "name": "knowledge.query"}, "payload": payload})
        )
        fetched = await client.get_task(GetTaskRequest(id=task.id))
    finally:
        await client.close()
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    result = _artifact(fetched, "result")[0]
    assert len(result["output"]["items"]) == 2
    assert all(isinstance(item, dict) and item for item in result["output"]["items"])


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_workflow_waits_in_input_required_and_completes_when_answered(
    agent_b: Agent, http: httpx.AsyncClient, binding: str
) -> None:
    client = await _client(http, agent_b, binding)
    try:
        first = _task(await _send(client, await _workflow(http, agent_b)))
        assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        waiting = get_data_parts(list(first.status.message.parts))[0]
        assert waiting["waiting_tasks"][0]["bpmn_id"] == "first_contact"
        answer = {"data": {"outcome": "contacted"}}
        done = _task(await _send(client, answer, task_id=first.id, context_id=first.context_id))
        fetched = await client.get_task(GetTaskRequest(id=first.id))
    finally:
        await client.close()
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    events = [entry["event"] for entry in _artifact(fetched, "log")]
    assert events[0] == "run.started"
    assert "task.waiting" in events
    assert events[-1] == "run.completed"
    assert _artifact(fetched, "run")[-1]["status"] == "completed"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_streamed_task_sends_partial_results_and_a_resubscription_follows_it_to_the_end(
    agent_b: Agent, http: httpx.AsyncClient, binding: str
) -> None:
    client = await _client(http, agent_b, binding, streaming=True)
    try:
        events = await _send(client, await _workflow(http, agent_b))
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds[0] == "task"
        assert "artifact_update" in kinds
        chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
        assert any(c.append for c in chunks if c.artifact.name == "log")
        last = events[-1].status_update
        assert last.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        task_id, context_id = last.task_id, last.context_id

        subscribed = asyncio.Event()

        async def follow() -> list[StreamResponse]:
            seen: list[StreamResponse] = []
            async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                seen.append(event)
                subscribed.set()  # the first event is the task as it stands: the subscription is live
            return seen

        watcher = asyncio.create_task(follow())
        await asyncio.wait_for(subscribed.wait(), timeout=30)
        plain = await _client(http, agent_b, binding)
        try:
            await _send(plain, {"data": {"outcome": "no_answer"}}, task_id=task_id, context_id=context_id)
        finally:
            await plain.close()
        seen = await asyncio.wait_for(watcher, timeout=30)
    finally:
        await client.close()
    states = [e.status_update.status.state for e in seen if e.HasField("status_update")]
    states += [e.task.status.state for e in seen if e.HasField("task")]
    assert TaskState.TASK_STATE_COMPLETED in states


@pytest.mark.parametrize("binding", BINDINGS)
async def test_canceling_a_waiting_task_makes_it_canceled(
    agent_b: Agent, http: httpx.AsyncClient, binding: str
) -> None:
    client = await _client(http, agent_b, binding)
    try:
        task = _task(await _send(client, await _workflow(http, agent_b)))
        canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
        fetched = await client.get_task(GetTaskRequest(id=task.id))
    finally:
        await client.close()
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert fetched.status.state == TaskState.TASK_STATE_CANCELED


async def test_another_companys_member_cannot_see_or_cancel_a_task(agent_b: Agent, http: httpx.AsyncClient) -> None:
    client = await _client(http, agent_b, "JSONRPC")
    try:
        task = _task(await _send(client, {"action": "dealer.information", "payload": {"dealership_id": TOYOTA}}))
    finally:
        await client.close()
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {agent_b.keys['bay']}"}) as other:
        stranger = await _client(other, agent_b, "JSONRPC")
        try:
            with pytest.raises(A2AError):
                await stranger.get_task(GetTaskRequest(id=task.id))
            with pytest.raises(A2AError):
                await stranger.cancel_task(CancelTaskRequest(id=task.id))
        finally:
            await stranger.close()


async def test_a_call_without_credentials_is_refused_with_a_challenge(agent_b: Agent) -> None:
    async with httpx.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
        response = await http.post(agent_b.server.url + "/agent/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"]["data"]["code"] == "auth.unauthorized"


async def test_a_refused_action_fails_the_task_with_the_errors_code(agent_b: Agent, http: httpx.AsyncClient) -> None:
    client = await _client(http, agent_b, "JSONRPC")
    try:
        task = _task(await _send(client, {"action": "inventory.search", "payload": {"dealership_id": "demo-bay-sj"}}))
    finally:
        await client.close()
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert get_data_parts(list(task.status.message.parts))[0]["error"]["code"] == "auth.tenancy_denied"


async def test_push_notifications_reach_the_callers_webhook_signed(agent_b: Agent, http: httpx.AsyncClient) -> None:
    webhook = Webhook()
    try:
        client = await _client(http, agent_b, "JSONRPC")
        secret = "webhook-secret-0123456789"
        push = TaskPushNotificationConfig(url=webhook.url, token=secret)
        config = SendMessageConfiguration(task_push_notification_config=push)
        try:
            task = _task(await _send(client, await _workflow(http, agent_b), configuration=config))
        finally:
            await client.close()
        await wait_for(lambda: len(webhook.received) >= 2)
    finally:
        webhook.server.stop()
    body, headers = webhook.received[-1]
    assert headers["x-a2a-notification-token"] == secret
    assert verify(secret, body, headers[SIGNATURE_HEADER.lower()])
    assert not verify("another-secret", body, headers[SIGNATURE_HEADER.lower()])
    assert task.id.encode() in body


async def test_a_webhook_on_a_private_address_is_refused_when_private_targets_are_not_allowed(
    tmp_path: Path, template: tuple[Path, dict[str, str]]
) -> None:
    agent = await asyncio.to_thread(_start, tmp_path, *template, allow_private_targets=False)
    try:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {agent.keys['crm']}"}) as http:
            client = await _client(http, agent, "JSONRPC")
            push = TaskPushNotificationConfig(url="http://127.0.0.1:9/hook", token="t")
            config = SendMessageConfiguration(task_push_notification_config=push)
            try:
                with pytest.raises(A2AError):
                    await _send(
                        client,
                        {"action": "dealer.information", "payload": {"dealership_id": TOYOTA}},
                        configuration=config,
                    )
            finally:
                await client.close()
    finally:
        agent.server.stop()


async def test_agent_a_delegates_over_a2a_to_agent_b_which_runs_the_adapter_and_answers(
    tmp_path: Path, template: tuple[Path, dict[str, str]], agent_b: Agent
) -> None:
    secret = tmp_path / "agent-b-token"
    secret.write_text(agent_b.keys["crm"])
    configs = tmp_path / "adapters"
    configs.mkdir()
    (configs / "a2a-peers.yaml").write_text(
        f"peers:\n  agent-b: {{card_url: '{agent_b.card_url}'}}\ncredentials: {{type: secret, file: '{secret}'}}\n"
    )
    agent_a = await asyncio.to_thread(_start, tmp_path, *template, adapter_config_dir=configs)
    try:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {agent_a.keys['crm']}"}, timeout=60) as http:
            body = {
                "id": "mcp-req:delegate-1",
                "action": {"type": "tool.run", "name": "agents.delegate", "version": "v1"},
                "payload": {
                    "peer": "agent-b",
                    "action": "embedding.create",
                    "payload": {"input": "Do you have a shuttle?", "dealership_id": TOYOTA},
                },
                "security": {"companyContext": {"companyId": MOTOR}},
            }
            response = await http.post(agent_a.server.url + "/mcp/agents.delegate", json=body)
    finally:
        agent_a.server.stop()
    assert response.status_code == 200, response.text
    output = response.json()["result"]["output"]
    assert output["state"] == "TASK_STATE_COMPLETED"
    result = output["artifacts"][0]["data"][0]
    assert result["type"] == "model.embedding"
    assert result["output"]["data"][0]["id"].startswith("vec_")
    # Agent B ran it: the vector is stored there, under B's record of the call.
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {agent_b.keys['crm']}"}) as http:
        stored = await http.post(
            agent_b.server.url + "/mcp/embedding.get", json={"payload": {"id": result["output"]["data"][0]["id"]}}
        )
    assert stored.status_code == 200
    assert stored.json()["result"]["output"]["dealership_id"] == TOYOTA


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_model_job_is_followed_until_it_ends_and_each_state_is_a_partial_result(
    agent_b: Agent, http: httpx.AsyncClient, binding: str
) -> None:
    client = await _client(http, agent_b, binding)
    try:
        task = _task(await _send(client, {"action": "jobs.demo.create", "payload": {}}))
        fetched = await client.get_task(GetTaskRequest(id=task.id))
    finally:
        await client.close()
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [chunk["state"] for chunk in _artifact(fetched, "job")] == ["queued", "running", "succeeded"]
    assert _artifact(fetched, "result")[0]["output"]["state"] == "succeeded"


async def test_a_job_that_fails_fails_its_task_with_an_error_code(agent_b: Agent, http: httpx.AsyncClient) -> None:
    client = await _client(http, agent_b, "JSONRPC")
    try:
        task = _task(await _send(client, {"action": "jobs.demo.create", "payload": {"fail": True}}))
    finally:
        await client.close()
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert [chunk["state"] for chunk in _artifact(task, "job")] == ["queued", "running", "failed"]
    assert _artifact(task, "result") == []
    note = get_data_parts(list(task.status.message.parts))[0]
    assert note["status"] == "failed"
    assert note["error"]["code"] == "a2a.job_failed"


async def test_a_job_that_reports_to_nobody_else_fails_its_task_when_the_polls_run_out_while_it_runs(
    agent_b: Agent, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("forecourt.surfaces.a2a.task_executor.JOB_MAX_POLLS", 3)
    client = await _client(http, agent_b, "JSONRPC")
    try:
        task = _task(await _send(client, {"action": "jobs.demo.create", "payload": {"hold": True}}))
    finally:
        await client.close()
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert _artifact(task, "result") == []
    error = get_data_parts(list(task.status.message.parts))[0]["error"]
    assert error["code"] == "a2a.job_still_running"
    assert error["details"] == {"job_id": error["details"]["job_id"], "status": "running", "get": "jobs.demo.get"}


async def test_canceling_a_running_job_task_cancels_the_job_upstream(agent_b: Agent, http: httpx.AsyncClient) -> None:
    client = await _client(http, agent_b, "JSONRPC")
    try:
        config = SendMessageConfiguration(return_immediately=True)
        started = _task(
            await _send(client, {"action": "jobs.demo.create", "payload": {"hold": True}}, configuration=config)
        )

        async def running() -> bool:
            task = await client.get_task(GetTaskRequest(id=started.id))
            return any(chunk["state"] == "running" for chunk in _artifact(task, "job"))

        await wait_for(running)
        canceled = await client.cancel_task(CancelTaskRequest(id=started.id))
    finally:
        await client.close()
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    await wait_for(lambda: agent_b.jobs.canceled)


async def test_a_task_started_on_one_replica_is_read_answered_and_finished_on_another(
    agent_b: Agent, http: httpx.AsyncClient
) -> None:
    assert agent_b.db is not None
    replica = await asyncio.to_thread(lambda: LiveServer(create_app(settings_for(agent_b.db))).start())
    try:
        other = Agent(replica, agent_b.keys)
        first = await _client(http, agent_b, "JSONRPC")
        second = await _client(http, other, "HTTP+JSON")
        try:
            task = _task(await _send(first, await _workflow(http, agent_b)))
            seen = await second.get_task(GetTaskRequest(id=task.id))
            done = _task(
                await _send(second, {"data": {"outcome": "contacted"}}, task_id=task.id, context_id=task.context_id)
            )
            back = await first.get_task(GetTaskRequest(id=task.id))
        finally:
            await first.close()
            await second.close()
    finally:
        await asyncio.to_thread(replica.stop)
    assert seen.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert back.status.state == TaskState.TASK_STATE_COMPLETED


async def test_a_call_a_policy_holds_waits_in_input_required_and_its_task_completes_by_itself_on_approval(
    agent_b: Agent, http: httpx.AsyncClient
) -> None:
    url = agent_b.server.url
    admin = {"Authorization": f"Bearer {agent_b.keys['admin']}"}
    policy = f"/admin/v1/companies/{MOTOR}/policies/{MOTOR}-default"
    rule = {"action": "embedding.delete"}
    assert (await http.put(url + policy, json={"require_approval": [rule]}, headers=admin)).status_code == 200
    stored = await http.post(url + "/mcp/embedding.create", json={"payload": {"input": "a note to delete"}})
    vector_id = stored.json()["result"]["output"]["data"][0]["id"]
    webhook = Webhook()
    client = await _client(http, agent_b, "JSONRPC")
    try:
        secret = "held-webhook-secret-0123456789"
        push = TaskPushNotificationConfig(url=webhook.url, token=secret)
        config = SendMessageConfiguration(task_push_notification_config=push)
        action = {"action": "embedding.delete", "payload": {"id": vector_id}}
        held = _task(await _send(client, action, configuration=config))
        note = get_data_parts(list(held.status.message.parts))[0]
        early = _task(await _send(client, {"data": {}}, task_id=held.id, context_id=held.context_id))
        pushed_before = len(webhook.received)
        decide = {"company_id": MOTOR, "approval_id": note["approval_id"], "decision": "approve"}
        decided = await http.post(url + "/mcp/approvals.decide", json={"payload": decide}, headers=admin)
        gone = await http.post(url + "/mcp/embedding.get", json={"payload": {"id": vector_id}})
        # Nothing more is sent on the task: it ended when the call ran.
        done = await client.get_task(GetTaskRequest(id=held.id))
        await wait_for(lambda: any(b"TASK_STATE_COMPLETED" in body for body, _ in webhook.received[pushed_before:]))
    finally:
        await client.close()
        webhook.server.stop()
        await http.put(url + policy, json={"require_approval": []}, headers=admin)
    assert held.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert note["code"] == "approval.pending"
    assert _artifact(held, "held") == [{"action": "embedding.delete", "approval_id": note["approval_id"]}]
    assert early.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert get_data_parts(list(early.status.message.parts))[0]["approval_id"] == note["approval_id"]
    assert decided.status_code == 200, decided.text
    assert decided.json()["result"]["output"]["outcome"] == "ok"
    assert gone.status_code == 404
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert _artifact(done, "result")[0]["type"] == "knowledge.vector_deleted"
    body, headers = next(r for r in webhook.received if b"TASK_STATE_COMPLETED" in r[0])
    assert verify(secret, body, headers[SIGNATURE_HEADER.lower()])
