"""A model job's A2A task ends with the job, on whichever replica is alive, exactly once.

Two gateway instances (``create_app``) share one database (an SQLite file; PostgreSQL too for the tests where two
writers meet), as two replicas do; the a2a-sdk client talks to each in process. ``nvidia.fineTune.create`` runs
against the NeMo Customizer-compatible fake. No background loop runs: each replica's model-job poller is driven by
hand (one ``tick`` is one round), and the fake ends a job when told to.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
import yaml
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
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

import fakes.webhook
from aap.support import DEMO_NOW, MOTOR, build_template, settings_for, wait_for
from fakes.customizer import FakeCustomizer, fake_customizer
from forecourt.bootstrap import Services, create_app
from forecourt.demo import load_demo
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.store import open_store_url, upgrade_async
from forecourt.store.model_jobs import ModelJobs
from forecourt.surfaces.a2a.push import SIGNATURE_HEADER, verify

CREATE = {"config": "meta/llama-3.1-8b-instruct@v1.0.0+A100", "dataset": {"name": "service-advisor-chats"}}
SECRET = "job-task-webhook-secret-0123456789"
BASE = "http://forecourt.test"


class Webhook(fakes.webhook.Webhook):
    """The loopback webhook, reading the terminal states pushed for a task."""

    def ends(self, task_id: str) -> list[tuple[str, bytes, dict[str, str]]]:
        """The terminal states pushed for the task, with each body and its headers, in arrival order."""
        found = []
        for body, headers in self.received:
            update = json.loads(body).get("statusUpdate") or {}
            state = update.get("status", {}).get("state", "")
            if update.get("taskId") == task_id and state in TERMINAL_NAMES:
                found.append((state, body, headers))
        return found


TERMINAL = (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED)
TERMINAL_NAMES = {TaskState.Name(state) for state in TERMINAL}


@dataclass
class Replica:
    """One gateway instance, and an HTTP client into it carrying the crm-agent's key."""

    services: Services
    http: httpx.AsyncClient
    stopped: bool = False

    async def client(self) -> Any:
        config = ClientConfig(httpx_client=self.http, streaming=False, supported_protocol_bindings=["JSONRPC"])
        return await ClientFactory(config).create_from_url(BASE + "/agent")

    async def get_task(self, task_id: str) -> Task:
        client = await self.client()
        try:
            task: Task = await client.get_task(GetTaskRequest(id=task_id))
        finally:
            await client.close()
        return task

    async def tick(self) -> tuple[int, int]:
        """One round of this replica's model-job poller an hour on (every unfinished job is due)."""
        poller = self.services.model_jobs
        assert poller is not None
        return await poller.tick(self.services.gateway.clock() + timedelta(hours=1))

    async def stop(self) -> None:
        """The replica stops: its running tasks' executors are cancelled and its connections closed."""
        if not self.stopped:
            self.stopped = True
            await self.http.aclose()
            await self.services.close()


@pytest.fixture(scope="module")
def customizer() -> Iterator[FakeCustomizer]:
    with fake_customizer() as fake:
        yield fake


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The demo database with API keys, built once for the module."""
    path = tmp_path_factory.mktemp("job-tasks-template") / "template.db"
    return path, asyncio.run(build_template(path))


@pytest.fixture(scope="module")
def webhook_server() -> Iterator[Webhook]:
    hook = Webhook()
    try:
        yield hook
    finally:
        hook.server.stop()


@pytest.fixture
def webhook(webhook_server: Webhook) -> Webhook:
    webhook_server.received.clear()
    return webhook_server


@pytest.fixture(autouse=True)
def fast_job_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A live executor polls every 10 ms instead of every 2 s."""
    monkeypatch.setattr("forecourt.surfaces.a2a.task_executor.JOB_POLL_S", 0.01)


async def _admin(admin_url: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def postgres_template(postgres_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A PostgreSQL database with the demo data and the crm-agent's key, built once: its name and the key."""
    name = f"forecourt_jt_{uuid.uuid4().hex[:10]}"
    url = postgres_admin_url.replace("postgresql://", "postgresql+asyncpg://").rsplit("/", 1)[0] + f"/{name}"

    async def build() -> str:
        await _admin(postgres_admin_url, f'CREATE DATABASE "{name}"')
        await upgrade_async(url)
        store = open_store_url(url)
        try:
            await load_demo(store, vehicles_per_dealership=4, now=DEMO_NOW)
            keys = ApiKeyService.from_settings(settings_for(Path("unused.db")), store, MemoryRevocationList())
            return (await keys.create(MOTOR, "crm-agent", name="crm")).key
        finally:
            await store.close()

    key = asyncio.run(build())
    try:
        yield name, key
    finally:
        asyncio.run(_admin(postgres_admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def database(
    request: pytest.FixtureRequest, template: tuple[Path, dict[str, str]], tmp_path: Path
) -> Iterator[tuple[str, str]]:
    """A fresh copy of the demo database (SQLite unless a test asks for ``postgresql``): its URL and the key."""
    if getattr(request, "param", "sqlite") == "sqlite":
        db = tmp_path / "forecourt.db"
        shutil.copyfile(template[0], db)
        yield f"sqlite+aiosqlite:///{db}", template[1]["crm"]
        return
    admin_url: str = request.getfixturevalue("postgres_admin_url")
    source, key = request.getfixturevalue("postgres_template")
    name = f"forecourt_jt_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{source}"'))
    try:
        yield admin_url.replace("postgresql://", "postgresql+asyncpg://").rsplit("/", 1)[0] + f"/{name}", key
    finally:
        asyncio.run(_admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def replicas(
    database: tuple[str, str], customizer: FakeCustomizer, tmp_path: Path
) -> AsyncIterator[tuple[Replica, Replica]]:
    """Two gateway instances on one database, the ``nvidia`` adapter's Customizer the fake."""
    customizer.reset()
    url, key = database
    configs = tmp_path / "adapters"
    configs.mkdir()
    nvidia = {"customizer": {"base_url": customizer.url}, "credentials": {"type": "none"}}
    (configs / "nvidia.yaml").write_text(yaml.safe_dump(nvidia), encoding="utf-8")
    made: list[Replica] = []
    try:
        for name in ("replica-1", "replica-2"):
            settings = settings_for(
                tmp_path / "unused.db", database_url=url, adapter_config_dir=configs, instance_name=name
            )
            app = create_app(settings)
            headers = {"Authorization": f"Bearer {key}"}
            http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, headers=headers, timeout=30)
            made.append(Replica(app.state.services, http))
        yield made[0], made[1]
    finally:
        for replica in made:
            await replica.stop()


def _request(webhook: Webhook, *, return_immediately: bool) -> SendMessageRequest:
    data = {"action": "nvidia.fineTune.create", "payload": CREATE}
    message = Message(
        message_id=uuid4().hex, role=Role.ROLE_USER, parts=[new_data_part(data, media_type="application/json")]
    )
    push = TaskPushNotificationConfig(url=webhook.url, token=SECRET)
    config = SendMessageConfiguration(task_push_notification_config=push, return_immediately=return_immediately)
    return SendMessageRequest(message=message, configuration=config)


def _chunks(task: Task, name: str) -> list[Any]:
    return [d for a in task.artifacts if a.name == name for d in get_data_parts(list(a.parts))]


def _note(task: Task) -> dict[str, Any]:
    found: dict[str, Any] = get_data_parts(list(task.status.message.parts))[0]
    return found


async def _send(replica: Replica, request: SendMessageRequest) -> Task:
    client = await replica.client()
    try:
        events: list[StreamResponse] = [event async for event in client.send_message(request)]
    finally:
        await client.close()
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


async def _start_job(replica: Replica, webhook: Webhook) -> Task:
    """Start a fine-tuning job as a task and wait (bounded) until the task shows the job, or ended."""
    task = await _send(replica, _request(webhook, return_immediately=True))

    async def started() -> Task | None:
        seen = await replica.get_task(task.id)
        return seen if _chunks(seen, "job") or seen.status.state in TERMINAL else None

    found: Task = await wait_for(started, timeout_s=30)
    return found


async def _followed_job(replica: Replica) -> str:
    """The Customizer's id of the fine-tuning job, once it is stored and its task shows it (bounded wait)."""

    async def followed() -> str | None:
        page = await ModelJobs(replica.services.store).page(MOTOR, "fine_tune", status=None, offset=0, limit=1)
        if not page or page[0].a2a_task_id is None:
            return None
        return page[0].remote_id if _chunks(await replica.get_task(page[0].a2a_task_id), "job") else None

    remote_id: str = await wait_for(followed, timeout_s=30)
    return remote_id


@pytest.mark.parametrize("database", ["sqlite", "postgresql"], indirect=True)
@pytest.mark.parametrize(
    ("customizer_end", "state", "status"),
    [
        ("completed", TaskState.TASK_STATE_COMPLETED, "succeeded"),
        ("failed", TaskState.TASK_STATE_FAILED, "failed"),
        ("cancelled", TaskState.TASK_STATE_CANCELED, "cancelled"),
    ],
)
async def test_a_job_task_whose_replica_stopped_ends_on_the_other_replica_when_the_job_ends(
    replicas: tuple[Replica, Replica],
    customizer: FakeCustomizer,
    webhook: Webhook,
    customizer_end: str,
    state: TaskState,
    status: str,
) -> None:
    one, two = replicas
    started = await _start_job(one, webhook)
    assert started.status.state == TaskState.TASK_STATE_WORKING  # while the job runs
    job = _chunks(started, "job")[0]
    await one.stop()  # the executor that followed the job goes with its replica
    customizer.end(job["remote_id"], customizer_end)

    rounds = [await two.tick(), await two.tick()]
    ended = await two.get_task(started.id)

    assert job["action"] == "nvidia.fineTune.create"
    assert job["status"] == "pending"
    assert rounds == [(1, 1), (0, 0)]  # refreshed, ended and announced once
    assert ended.status.state == state
    assert [chunk["status"] for chunk in _chunks(ended, "job")] == ["pending", status]
    assert _note(ended)["job_id"] == job["job_id"]
    if state == TaskState.TASK_STATE_COMPLETED:
        [result] = _chunks(ended, "result")
        assert result["type"] == "model.job"
        assert result["metadata"] == {"runtime": "nvidia"}
        assert result["output"]["status"] == "succeeded"
        assert result["output"]["result"]["output_model"].startswith("default/meta/llama-3.1-8b-instruct-ft@")
    else:
        assert _chunks(ended, "result") == []
    if state == TaskState.TASK_STATE_FAILED:
        assert _note(ended)["error"]["code"] == "models.job_failed"
    [(pushed, body, headers)] = webhook.ends(started.id)
    assert pushed == TaskState.Name(state)
    assert verify(SECRET, body, headers[SIGNATURE_HEADER.lower()])


@pytest.mark.parametrize("database", ["sqlite", "postgresql"], indirect=True)
@pytest.mark.parametrize("poller", ["its own replica", "the other replica"])
async def test_a_live_executor_and_the_poller_end_a_job_task_once_and_the_blocking_send_answers_the_end(
    replicas: tuple[Replica, Replica],
    customizer: FakeCustomizer,
    webhook: Webhook,
    caplog: pytest.LogCaptureFixture,
    poller: str,
) -> None:
    one, two = replicas
    caplog.set_level(logging.WARNING)
    sending = asyncio.create_task(_send(one, _request(webhook, return_immediately=False)))
    customizer.end(await _followed_job(one), "completed")

    rounds = await (one if poller == "its own replica" else two).tick()
    answered = await asyncio.wait_for(sending, timeout=30)
    ended = await two.get_task(answered.id)

    assert rounds == (1, 1)
    assert answered.status.state == TaskState.TASK_STATE_COMPLETED
    assert ended.status.state == TaskState.TASK_STATE_COMPLETED
    [result] = _chunks(ended, "result")
    assert result["output"]["status"] == "succeeded"
    assert [chunk["status"] for chunk in _chunks(ended, "job")] == ["pending", "succeeded"]
    assert [state for state, _, _ in webhook.ends(answered.id)] == ["TASK_STATE_COMPLETED"]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_canceling_a_job_task_cancels_the_job_and_the_jobs_end_then_changes_nothing(
    replicas: tuple[Replica, Replica], customizer: FakeCustomizer, webhook: Webhook
) -> None:
    one, two = replicas
    started = await _start_job(one, webhook)
    assert started.status.state == TaskState.TASK_STATE_WORKING
    client = await one.client()
    try:
        canceled = await client.cancel_task(CancelTaskRequest(id=started.id))
    finally:
        await client.close()

    rounds = await two.tick()
    ended = await two.get_task(started.id)

    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert customizer.jobs[_chunks(started, "job")[0]["remote_id"]]["status"] == "cancelled"
    assert rounds == (0, 1)  # the job's end is announced; its task had already ended
    assert ended.status.state == TaskState.TASK_STATE_CANCELED
    assert [state for state, _, _ in webhook.ends(started.id)] == ["TASK_STATE_CANCELED"]


async def test_a_job_task_whose_polls_run_out_stays_working_until_the_job_ends(
    replicas: tuple[Replica, Replica],
    customizer: FakeCustomizer,
    webhook: Webhook,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = replicas
    monkeypatch.setattr("forecourt.surfaces.a2a.task_executor.JOB_MAX_POLLS", 3)
    answered = await _send(one, _request(webhook, return_immediately=False))  # the executor gave up following
    customizer.end(await _followed_job(one), "completed")

    before = await one.get_task(answered.id)
    rounds = await two.tick()
    ended = await one.get_task(answered.id)

    assert answered.status.state == TaskState.TASK_STATE_WORKING
    assert before.status.state == TaskState.TASK_STATE_WORKING
    assert _chunks(before, "result") == []
    assert rounds == (1, 1)
    assert ended.status.state == TaskState.TASK_STATE_COMPLETED
    assert _chunks(ended, "result")[0]["output"]["status"] == "succeeded"
    assert [state for state, _, _ in webhook.ends(answered.id)] == ["TASK_STATE_COMPLETED"]


@pytest.mark.parametrize("database", ["sqlite", "postgresql"], indirect=True)
async def test_two_replicas_whose_pollers_meet_one_ended_job_at_once_end_its_task_once(
    replicas: tuple[Replica, Replica], customizer: FakeCustomizer, webhook: Webhook, caplog: pytest.LogCaptureFixture
) -> None:
    one, two = replicas
    caplog.set_level(logging.WARNING)
    started = await _start_job(one, webhook)
    assert started.status.state == TaskState.TASK_STATE_WORKING
    customizer.end(_chunks(started, "job")[0]["remote_id"], "completed")

    rounds = await asyncio.gather(one.tick(), two.tick())
    ended = await two.get_task(started.id)

    assert sum(announced for _, announced in rounds) == 1
    assert ended.status.state == TaskState.TASK_STATE_COMPLETED
    [result] = _chunks(ended, "result")
    assert result["output"]["status"] == "succeeded"
    assert [state for state, _, _ in webhook.ends(started.id)] == ["TASK_STATE_COMPLETED"]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def _cancel(replica: Replica, task_id: str) -> Task:
    client = await replica.client()
    try:
        task: Task = await client.cancel_task(CancelTaskRequest(id=task_id))
    finally:
        await client.close()
    return task


async def _job_canceled_elsewhere(one: Replica, two: Replica, webhook: Webhook) -> tuple[Task, dict[str, Any]]:
    """A job task started on ``one``, whose replica then stops, canceled on ``two``: the task and its job chunk."""
    started = await _start_job(one, webhook)
    assert started.status.state == TaskState.TASK_STATE_WORKING
    await one.stop()
    canceled = await _cancel(two, started.id)
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    job: dict[str, Any] = _chunks(started, "job")[0]
    return started, job


async def test_a_job_task_canceled_on_another_replica_cancels_the_job_upstream(
    replicas: tuple[Replica, Replica], customizer: FakeCustomizer, webhook: Webhook, caplog: pytest.LogCaptureFixture
) -> None:
    one, two = replicas
    caplog.set_level(logging.WARNING)
    started, job = await _job_canceled_elsewhere(one, two, webhook)
    assert customizer.cancels == []  # the replica that answered the cancel does not run the task

    rounds = [await two.tick(), await two.tick()]
    stored = await ModelJobs(two.services.store).get(MOTOR, job["job_id"])
    ended = await two.get_task(started.id)

    assert customizer.cancels == [job["remote_id"]]
    assert customizer.jobs[job["remote_id"]]["status"] == "cancelled"
    assert stored is not None
    assert stored.status == "cancelled"
    assert rounds == [(1, 1), (0, 0)]  # canceled upstream and announced, once
    assert ended.status.state == TaskState.TASK_STATE_CANCELED
    assert [r.getMessage() for r in caplog.records if r.name == "forecourt.delivery.model_jobs"] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_failed_upstream_cancel_of_a_canceled_job_task_is_tried_again_on_the_next_round(
    replicas: tuple[Replica, Replica], customizer: FakeCustomizer, webhook: Webhook, caplog: pytest.LogCaptureFixture
) -> None:
    one, two = replicas
    caplog.set_level(logging.WARNING)
    started, job = await _job_canceled_elsewhere(one, two, webhook)
    customizer.faults.fail(503, {"detail": "customizer restarting"})
    poller = two.services.model_jobs
    assert poller is not None
    now = two.services.gateway.clock() + timedelta(hours=1)

    first = await poller.tick(now)
    between = await ModelJobs(two.services.store).get(MOTOR, job["job_id"])
    second = await poller.tick(now + timedelta(hours=1))
    stored = await ModelJobs(two.services.store).get(MOTOR, job["job_id"])
    ended = await two.get_task(started.id)

    assert first == (1, 0)
    assert between is not None
    assert not between.done  # polled instead, and still running upstream
    assert second == (1, 1)
    assert customizer.cancels == [job["remote_id"], job["remote_id"]]
    assert stored is not None
    assert stored.status == "cancelled"
    assert ended.status.state == TaskState.TASK_STATE_CANCELED
    warned = [r for r in caplog.records if r.name == "forecourt.delivery.model_jobs" and r.levelno == logging.WARNING]
    assert [r.args[-1] for r in warned if isinstance(r.args, tuple)] == ["upstream.unavailable"]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
