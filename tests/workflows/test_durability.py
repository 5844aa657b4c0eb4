"""Run state lives in the database: runs survive a killed process, continue on another replica, never twice."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from forecourt.adapters.workflow.errors import RunConflict
from forecourt.adapters.workflow.repository import WorkflowRepository
from forecourt.contract import Action, AdapterResult, ExecutionContext

from .bpmn_builder import chain, script, service
from .conftest import MOTOR, PEPPER, TOYOTA, Rig

CHILD = r"""
import asyncio, sys
from pathlib import Path
import pytest

from forecourt.contract import Action, AdapterResult
from forecourt.bootstrap import build_services
from forecourt.gateway.base import Credentials, Invocation
from forecourt.settings import Settings

db_url, key, marker, pepper = sys.argv[1:5]


class Blocker:
    id = "test-blocker"

    async def execute(self, payload, context):
        Path(marker).write_text("started")  # the run's checkpoint is in the database by now
        await asyncio.Event().wait()  # never returns: the test kills this process


async def main():
    services = build_services(Settings(database_url=db_url, api_key_pepper=pepper, instance_name="replica-killed"))
    services.catalogue.add(BLOCK)
    services.catalogue.add_adapter(Blocker())
    await services.start()
    await services.gateway.invoke(
        Invocation(
            action="workflow.run",
            payload={"dealership_id": "demo-toyota-sf", "workflow_id": "blocking"},
            credentials=Credentials(bearer=key),
        )
    )


BLOCK = Action(
    name="test.block", type="tool.run", title="block", description="Blocks.", input_schema={"type": "object"},
    output_schema=None, adapter="test-blocker", scope="amcp:workflow:read", timeout_s=600,
)
asyncio.run(main())
"""

BLOCKING = chain(
    "blocking",
    service("info", "dealer.information", result="dealer"),
    service("wait", "test.block", {"step": '"one"'}, result="unblocked"),
    script("after", 'artifacts["done"] = unblocked["ok"]\nartifacts["dealer"] = dealer["name"]'),
)


class _Unblocker:
    id = "test-blocker"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def execute(self, payload: Any, context: ExecutionContext) -> AdapterResult:
        self.calls.append(dict(payload))
        return AdapterResult(output={"ok": True})


def _add_block_action(rig: Rig) -> _Unblocker:
    adapter = _Unblocker()
    rig.services.catalogue.add(
        Action(
            name="test.block",
            type="tool.run",
            title="block",
            description="Returns at once here.",
            input_schema={"type": "object"},
            output_schema=None,
            adapter=adapter.id,
            scope="amcp:workflow:read",
        )
    )
    rig.services.catalogue.add_adapter(adapter)
    return adapter


async def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():  # noqa: ASYNC240 - a stat per 50 ms poll
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"the child process exited early: {err.decode()[-2000:]}")
        assert time.monotonic() < deadline, "the child never reached the blocking service task"
        await asyncio.sleep(0.05)


async def test_a_run_interrupted_by_a_killed_process_resumes_and_completes_elsewhere(rig: Rig, tmp_path: Path) -> None:
    await rig.invoke(
        "admin.workflows.upload", {"company_id": MOTOR, "workflow_id": "blocking", "bpmn": BLOCKING}, key="admin"
    )
    marker = tmp_path / "blocked"
    url = f"sqlite+aiosqlite:///{rig.db_path}"
    proc = subprocess.Popen(  # noqa: ASYNC220 - started once; the test then polls it
        [sys.executable, "-c", CHILD, url, rig.keys["crm"], str(marker), PEPPER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        await _wait_for(marker, proc)
    finally:
        proc.kill()
        proc.communicate()

    (interrupted,) = (await rig.invoke("workflow.list_runs", {"dealership_id": TOYOTA}))["items"]
    run_id = interrupted["run_id"]
    before = await rig.invoke("workflow.get", {"dealership_id": TOYOTA, "run_id": run_id})
    assert before["status"] == "running"
    assert {t["bpmn_id"]: t["state"] for t in before["tasks"]}["wait"] == "started"

    # The killed replica's lease has not expired yet: nobody may take the run over.
    busy = await rig.error("workflow.resume", {"dealership_id": TOYOTA, "run_id": run_id})
    assert busy.code == "workflow.run_busy"

    unblocker = _add_block_action(rig)
    rig.services.gateway.clock = lambda: datetime.now(UTC) + timedelta(minutes=5)
    resumed = await rig.invoke("workflow.resume", {"dealership_id": TOYOTA, "run_id": run_id})

    assert resumed["status"] == "completed"
    assert resumed["artifacts"] == {"done": True, "dealer": "Demo Toyota San Francisco"}
    assert unblocker.calls == [{"step": "one", "dealership_id": TOYOTA}]
    events = [(e["event"], e.get("task"), e["replica"]) for e in resumed["log"]]
    assert events[0] == ("run.started", None, "replica-killed")
    assert ("task.completed", "info", "replica-killed") in events
    assert ("run.resumed", None, "replica-a") in events
    assert ("task.completed", "wait", "replica-a") in events
    assert events[-1] == ("run.completed", None, "replica-a")


async def test_resuming_a_finished_or_waiting_run_changes_nothing(rig: Rig) -> None:
    rig.services.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")
    lead = (await rig.invoke("leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": 1}))["items"][0]
    run = await rig.invoke(
        "workflow.run",
        {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead["id"]}},
    )

    again = await rig.invoke("workflow.resume", {"dealership_id": TOYOTA, "run_id": run["run_id"]})

    assert again["status"] == "input_required"
    assert again["revision"] == run["revision"]


async def test_a_user_task_completes_from_another_app_instance(rig: Rig) -> None:
    rig.services.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")
    other = await rig.replica("replica-b")
    other.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")
    lead = (await rig.invoke("leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": 1}))["items"][0]
    run = await rig.invoke(
        "workflow.run",
        {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead["id"]}},
    )
    complete = {
        "dealership_id": TOYOTA,
        "run_id": run["run_id"],
        "task_id": run["waiting_tasks"][0]["task_id"],
        "data": {"outcome": "contacted"},
    }

    done = await rig.invoke("workflow.complete_task", complete, services=other)
    twice = await rig.error("workflow.complete_task", complete)

    assert done["status"] == "completed"
    replicas = {(e["event"], e["replica"]) for e in done["log"]}
    assert ("run.started", "replica-a") in replicas
    assert ("task.completed", "replica-b") in replicas
    assert ("run.completed", "replica-b") in replicas
    assert twice.code == "workflow.task_not_waiting"
    seen_by_a = await rig.invoke("workflow.get", {"dealership_id": TOYOTA, "run_id": run["run_id"]})
    assert seen_by_a["status"] == "completed"


async def test_two_replicas_completing_the_same_task_at_once_advance_it_only_once(rig: Rig) -> None:
    rig.services.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")
    other = await rig.replica("replica-b")
    other.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")
    lead = (await rig.invoke("leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": 1}))["items"][0]
    run = await rig.invoke(
        "workflow.run",
        {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead["id"]}},
    )
    complete = {
        "dealership_id": TOYOTA,
        "run_id": run["run_id"],
        "task_id": run["waiting_tasks"][0]["task_id"],
        "data": {"outcome": "contacted"},
    }

    results = await asyncio.gather(
        rig.invoke("workflow.complete_task", complete),
        rig.invoke("workflow.complete_task", complete, services=other),
        return_exceptions=True,
    )

    successes = [r for r in results if isinstance(r, dict)]
    failures = [r for r in results if not isinstance(r, dict)]
    assert len(successes) == 1
    assert [getattr(f, "code", None) for f in failures] in (["workflow.run_conflict"], ["workflow.task_not_waiting"])
    final = await rig.invoke("workflow.get", {"dealership_id": TOYOTA, "run_id": run["run_id"]})
    assert final["status"] == "completed"
    assert [e["event"] for e in final["log"]].count("run.completed") == 1


async def test_a_stale_write_is_refused_by_the_revision_check(rig: Rig) -> None:
    rig.services.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")
    lead = (await rig.invoke("leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": 1}))["items"][0]
    run = await rig.invoke(
        "workflow.run",
        {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead["id"]}},
    )
    repository = WorkflowRepository(rig.services.store)
    first = await repository.get_run(run["run_id"])
    second = await repository.get_run(run["run_id"])
    assert first is not None
    assert second is not None

    await repository.save_run(first)
    with pytest.raises(RunConflict) as info:
        await repository.save_run(second)

    assert info.value.code == "workflow.run_conflict"
