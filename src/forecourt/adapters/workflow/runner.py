"""The async side of the BPM runner: start, advance, persist and resume workflow runs.

Design (why no threads): SpiffWorkflow is synchronous, gateway calls are async. The engine never calls
out itself; :class:`~forecourt.adapters.workflow.engine.AsyncServiceTask` parks each service task as
``STARTED`` with its evaluated request. :meth:`WorkflowRunner._advance` loops: step the engine (scripts,
gateways, events, all pure CPU and sandboxed) → collect the parked calls → **checkpoint** the run to the
database → await each call through ``ExecutionContext.invoke`` (the whole gateway pipeline, as the caller)
→ write the answers back → step again, until the run completes, fails, or waits for a user task.

Durability: because the checkpoint is written before any call goes out, a process that dies mid-run
leaves a ``running`` row whose state names the outstanding calls. Another replica (or the restarted
process) continues it with ``workflow.resume`` once the dead replica's lease has expired; the parked
calls are made again (at-least-once, so service tasks should call idempotent actions or tolerate a
repeat). Every write carries the revision it read, so two replicas can never both advance one run.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from forecourt.adapters.workflow import engine
from forecourt.adapters.workflow.builtins import Builtins
from forecourt.adapters.workflow.definitions import resolve
from forecourt.adapters.workflow.errors import (
    OperatorNotAllowed,
    RunBusy,
    RunNotFound,
    TaskNotWaiting,
)
from forecourt.adapters.workflow.repository import RunRecord, WorkflowRepository
from forecourt.adapters.workflow.views import run_view, summary_view, validate_submission
from forecourt.contract import Catalogue, ExecutionContext
from forecourt.errors import ForecourtError, InternalError, UnknownAction

logger = logging.getLogger(__name__)

DEFAULT_LEASE_S = 60.0
MAX_LOG_ENTRIES = 500
# A workflow must not start or drive workflows: that would nest bulkheads and leases without bound.
FORBIDDEN_OPERATORS = frozenset({"workflow.run", "workflow.complete_task", "workflow.resume", "workflow.cancel"})
ENDED = frozenset({"completed", "failed", "canceled"})
"""A run in one of these statuses never changes again."""


@dataclass
class _Active:
    """A run being advanced by this process."""

    record: RunRecord
    workflow: Any
    ctx: ExecutionContext
    failed: bool = False
    started: float = field(default_factory=time.perf_counter)


def _now_fn(ctx: ExecutionContext) -> Callable[[], str]:
    return ctx.now.isoformat


def _engine_error(exc: BaseException, default_task: str | None = None) -> dict[str, Any]:
    task = getattr(exc, "task", None)
    spec = getattr(task, "task_spec", None) or getattr(exc, "task_spec", None)
    error: dict[str, Any] = {
        "code": "workflow.script_error",
        "message": "A script or expression in the workflow failed.",
        "task": getattr(spec, "bpmn_id", None) or default_task,
        "reason": getattr(exc, "error_type", None) or type(exc).__name__,
    }
    if getattr(exc, "line_number", None):
        error["line"] = exc.line_number  # type: ignore[attr-defined]
    return error


class WorkflowRunner:
    """Starts and advances runs for the ``workflow.*`` actions."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.builtins = Builtins()

    @staticmethod
    def _repo(ctx: ExecutionContext) -> WorkflowRepository:
        return WorkflowRepository(ctx.store)

    # ------------------------------------------------------------------ actions

    async def start(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
        """``workflow.run``: start a run and advance it as far as it goes."""
        company_id, dealership_id = self._tenancy(ctx)
        version = payload.get("version")
        found = await resolve(self._repo(ctx), company_id, str(payload["workflow_id"]), version)
        definition = engine.parse_definition(found.bpmn)
        run_id = uuid.uuid4().hex
        data = {
            "inputs": dict(payload.get("inputs") or {}),
            "artifacts": {},
            "run": {"run_id": run_id, "dealership_id": dealership_id, "workflow_id": found.workflow_id},
        }
        workflow = engine.start(definition, data, _now_fn(ctx))
        record = RunRecord(
            id=run_id,
            company_id=company_id,
            dealership_id=dealership_id,
            workflow_id=found.workflow_id,
            version=found.version,
            status="running",
            state=engine.dumps(workflow),
            created_at=ctx.now,
            updated_at=ctx.now,
            started_by=ctx.principal.member_id,
        )
        self._lease(record, ctx)
        active = _Active(record, workflow, ctx)
        self._log(active, "run.started", source=found.source, version=found.version)
        await self._repo(ctx).insert_run(record)
        await self._advance(active)
        return run_view(record, workflow)

    async def get(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
        """``workflow.get``: a run's current state."""
        record = await self._load(str(payload["run_id"]), ctx)
        return run_view(record, engine.loads(record.state, _now_fn(ctx)))

    async def list_runs(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
        """``workflow.list_runs``: the dealership's runs, newest first."""
        _, dealership_id = self._tenancy(ctx)
        status = payload.get("status")
        records = await self._repo(ctx).list_runs(
            dealership_id, status=str(status) if status else None, limit=int(payload.get("limit", 20))
        )
        return {"items": [summary_view(r) for r in records if r.company_id == ctx.company_id]}

    async def complete_task(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
        """``workflow.complete_task``: complete a waiting user task and continue the run."""
        record = await self._load(str(payload["run_id"]), ctx)
        workflow = engine.loads(record.state, _now_fn(ctx))
        task_id = str(payload["task_id"])
        task = engine.find_task(workflow, task_id)
        if record.status != "input_required" or task is None or task not in engine.waiting_user_tasks(workflow):
            raise TaskNotWaiting(details={"task_id": task_id[:64], "status": record.status})
        data = dict(payload.get("data") or {})
        validate_submission(task, data)
        active = _Active(record, workflow, ctx)
        await self._claim(active)  # only one replica may take the task
        self._log(active, "task.completed", task=task.task_spec.bpmn_id, by=ctx.principal.member_id)
        if self._guard(active, lambda: engine.complete_user_task(task, data), task.task_spec.bpmn_id):
            await self._advance(active)
        else:
            await self._finish(active)
        return run_view(record, workflow)

    async def cancel(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
        """``workflow.cancel``: stop a run that has not ended; its waiting user tasks are no longer answerable.

        A run that already ended is returned unchanged, so canceling is safe to repeat. A replica advancing the run
        meanwhile meets a newer revision at its next checkpoint and stops (``workflow.run_conflict``).
        """
        record = await self._load(str(payload["run_id"]), ctx)
        workflow = engine.loads(record.state, _now_fn(ctx))
        if record.status in ENDED:
            return run_view(record, workflow)
        active = _Active(record, workflow, ctx)
        record.status = "canceled"
        record.lease_owner = None
        record.lease_expires_at = None
        record.updated_at = ctx.now
        self._log(active, "run.canceled", by=ctx.principal.member_id)
        await self._repo(ctx).save_run(record)
        return run_view(record, workflow)

    async def resume(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
        """``workflow.resume``: continue a ``running`` run whose replica stopped (lease expired).

        A run in any other status is returned unchanged, so resuming is safe to repeat.
        """
        record = await self._load(str(payload["run_id"]), ctx)
        workflow = engine.loads(record.state, _now_fn(ctx))
        if record.status != "running":
            return run_view(record, workflow)
        if record.lease_owner and record.lease_expires_at and record.lease_expires_at > ctx.now:
            raise RunBusy(details={"lease_expires_at": record.lease_expires_at.isoformat()})
        active = _Active(record, workflow, ctx)
        previous = record.lease_owner
        await self._claim(active)
        self._log(active, "run.resumed", previous_replica=previous)
        await self._advance(active)
        return run_view(record, workflow)

    # ------------------------------------------------------------------ advancing

    async def _advance(self, active: _Active) -> None:
        while not active.failed:
            if not self._guard(active, lambda: engine.step(active.workflow, self._on_task_done(active))):
                break
            calls = list(engine.pending_calls(active.workflow))
            if not calls:
                break
            await self._checkpoint(active)
            for task, request in calls:
                if not await self._call(active, task, request):
                    break
        await self._finish(active)

    def _on_task_done(self, active: _Active) -> Callable[[Any], None]:
        def done(task: Any) -> None:
            bpmn_id = getattr(task.task_spec, "bpmn_id", None)
            if bpmn_id and not engine.is_parked(task):
                self._log(active, "task.completed", task=bpmn_id, type=engine.type_of(task.task_spec))

        return done

    async def _call(self, active: _Active, task: Any, request: Mapping[str, Any]) -> bool:
        operator = str(request.get("operator", ""))
        params = dict(request.get("params") or {})
        bpmn_id = task.task_spec.bpmn_id
        props = (task.task_spec.extensions or {}).get("properties") or {}
        started = time.perf_counter()
        try:
            result = await self._dispatch(active, operator, params)
        except ForecourtError as exc:
            took = round((time.perf_counter() - started) * 1000, 3)
            if exc.code == UnknownAction.code and props.get("on_unknown_action") == "skip":
                self._log(active, "task.skipped", task=bpmn_id, operator=operator, code=exc.code, duration_ms=took)
                result = {"skipped": True, "reason": exc.code, "operator": operator}
                return self._guard(active, lambda: engine.finish_service_task(task, result), bpmn_id)
            self._log(active, "task.failed", task=bpmn_id, operator=operator, code=exc.code, duration_ms=took)
            task.error()
            active.failed = True
            active.record.error = {"code": exc.code, "message": exc.message, "task": bpmn_id, "operator": operator}
            return False
        took = round((time.perf_counter() - started) * 1000, 3)
        self._log(active, "task.completed", task=bpmn_id, type="serviceTask", operator=operator, duration_ms=took)
        return self._guard(active, lambda: engine.finish_service_task(task, result), bpmn_id)

    async def _dispatch(self, active: _Active, operator: str, params: dict[str, Any]) -> Any:
        if operator in FORBIDDEN_OPERATORS:
            raise OperatorNotAllowed(details={"operator": operator})
        action = self.catalogue.get(operator)
        dealership_id = active.record.dealership_id
        if action is None and operator in self.builtins:
            return await self.builtins.run(operator, params, active.ctx, dealership_id)
        if action is not None and action.dealer_scoped:
            params.setdefault("dealership_id", dealership_id)
        if active.ctx.invoke is None:
            raise InternalError()
        return await active.ctx.invoke(operator, params)

    def _guard(self, active: _Active, fn: Callable[[], None], task: str | None = None) -> bool:
        """Run synchronous engine code; a script failure fails the run instead of raising."""
        try:
            fn()
        except engine.ENGINE_ERRORS as exc:
            error = _engine_error(exc, task)
            logger.info("workflow run %s failed in task %s: %s", active.record.id, error["task"], error["reason"])
            self._log(active, "task.failed", task=error["task"], code=error["code"], reason=error["reason"])
            active.record.error = error
            active.failed = True
            return False
        return True

    # ------------------------------------------------------------------ persistence

    async def _checkpoint(self, active: _Active) -> None:
        record = active.record
        record.status = "running"
        record.state = engine.dumps(active.workflow)
        record.updated_at = active.ctx.now
        self._lease(record, active.ctx)
        await self._repo(active.ctx).save_run(record)

    async def _claim(self, active: _Active) -> None:
        record = active.record
        record.status = "running"
        record.updated_at = active.ctx.now
        self._lease(record, active.ctx)
        await self._repo(active.ctx).save_run(record)

    async def _finish(self, active: _Active) -> None:
        record, workflow = active.record, active.workflow
        if active.failed:
            record.status = "failed"
        elif engine.is_completed(workflow):
            record.status = "completed"
        elif engine.waiting_user_tasks(workflow):
            record.status = "input_required"
            announced = {e.get("task_id") for e in record.log if e.get("event") == "task.waiting"}
            for task in engine.waiting_user_tasks(workflow):
                if str(task.id) not in announced:
                    self._log(active, "task.waiting", task=task.task_spec.bpmn_id, task_id=str(task.id))
        else:
            record.status = "running"  # waiting for an event or timer; workflow.resume steps it again
        record.state = engine.dumps(workflow)
        artifacts = engine.result_data(workflow).get("artifacts")
        if isinstance(artifacts, dict):
            record.artifacts = {**record.artifacts, **artifacts}
        record.lease_owner = None  # nothing of this run is in flight here any more
        record.lease_expires_at = None
        record.updated_at = active.ctx.now
        if record.status in ("completed", "failed"):
            self._log(active, f"run.{record.status}")
        await self._repo(active.ctx).save_run(record)

    def _lease(self, record: RunRecord, ctx: ExecutionContext) -> None:
        lease_s = float(ctx.adapter_config.get("lease_s", DEFAULT_LEASE_S))
        record.lease_owner = ctx.settings.instance_name
        record.lease_expires_at = ctx.now + timedelta(seconds=lease_s)

    async def _load(self, run_id: str, ctx: ExecutionContext) -> RunRecord:
        company_id, dealership_id = self._tenancy(ctx)
        record = await self._repo(ctx).get_run(run_id)
        # Another company's or rooftop's run is indistinguishable from a missing one.
        if record is None or record.company_id != company_id or record.dealership_id != dealership_id:
            raise RunNotFound()
        return record

    @staticmethod
    def _tenancy(ctx: ExecutionContext) -> tuple[str, str]:
        if ctx.company_id is None or ctx.dealership_id is None:
            raise InternalError()
        return ctx.company_id, ctx.dealership_id

    def _log(self, active: _Active, event: str, **fields: Any) -> None:
        elapsed = timedelta(seconds=time.perf_counter() - active.started)
        entry: dict[str, Any] = {
            "at": (active.ctx.now + elapsed).isoformat(),
            "event": event,
            "replica": active.ctx.settings.instance_name,
        }
        entry.update({k: v for k, v in fields.items() if v is not None})
        log = active.record.log
        log.append(entry)
        if len(log) > MAX_LOG_ENTRIES:
            del log[1 : len(log) - MAX_LOG_ENTRIES + 1]  # keep the first entry (run.started) and the newest
