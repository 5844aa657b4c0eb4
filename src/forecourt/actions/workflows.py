"""The workflow actions (seed 001 §5 "BPM Runner Adapter", §8 C): ``workflow.*`` run by the BPMN runner, and
``admin.workflows.upload|list`` for a company's definitions (only its administrators, or the operator)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext, Handler
from forecourt.actions.common import admin_action
from forecourt.adapters.workflow import MAX_BPMN_BYTES
from forecourt.adapters.workflow.admin import ADAPTER_ID as ADMIN_ADAPTER_ID
from forecourt.adapters.workflow.admin import WorkflowAdminAdapter
from forecourt.adapters.workflow.runner import WorkflowRunner
from forecourt.errors import UnknownAction

ADAPTER_ID = "workflow"
RESULT_TYPE = "workflow.run"
WORKFLOW_ID: dict[str, Any] = {
    "type": "string",
    "pattern": "^[a-z0-9][a-z0-9_.-]{0,63}$",
    "description": "A definition id: shipped (new_lead_follow_up, service_appointment_reminder) or uploaded.",
}
RUN_ID: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 64}
DEALERSHIP_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 128,
    "description": "The dealership (rooftop) to act on; optional when the credential is bound to exactly one.",
}
STATUS: dict[str, Any] = {"enum": ["running", "input_required", "completed", "failed", "canceled"]}
RUN_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "run_id": {"type": "string"},
        "workflow_id": {"type": "string"},
        "version": {"type": "integer"},
        "dealership_id": {"type": "string"},
        "status": STATUS,
        "revision": {"type": "integer"},
        "tasks": {"type": "array", "items": {"type": "object"}},
        "waiting_tasks": {"type": "array", "items": {"type": "object"}},
        "log": {"type": "array", "items": {"type": "object"}},
        "artifacts": {"type": "object"},
        "outputs": {"type": ["object", "null"]},
        "error": {"type": ["object", "null"]},
    },
    "required": ["run_id", "workflow_id", "status", "tasks", "log", "artifacts"],
}


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"dealership_id": DEALERSHIP_ID, **props},
        "required": required,
        "additionalProperties": False,
    }


def _action(
    name: str,
    title: str,
    description: str,
    schema: dict[str, Any],
    *,
    write: bool,
    example: dict[str, Any] | None = None,
) -> Action:
    return Action(
        name=name,
        type="workflow.run",
        title=title,
        description=description,
        input_schema=schema,
        output_schema=RUN_OUTPUT if name != "workflow.list_runs" else None,
        adapter=ADAPTER_ID,
        scope="amcp:workflow:write" if write else "amcp:workflow:read",
        side_effect=write,
        idempotent=not write,
        timeout_s=60.0,
        domain="workflow",
        result_type=RESULT_TYPE,
        tags=("workflow",),
        example=example,
    )


WORKFLOW_ACTIONS: tuple[Action, ...] = (
    _action(
        "workflow.run",
        "Run a BPMN workflow",
        (
            "Start a BPMN 2.0 workflow at a dealership and advance it as far as it goes. Service tasks call other "
            "actions as the caller (policy applies); a user task stops the run in `input_required` until "
            "`workflow.complete_task`. Returns the run: status, task states, execution log, artifacts, outputs. Use "
            "it to start one of the company's defined processes, e.g. a lead follow-up."
        ),
        _schema(
            {
                "workflow_id": WORKFLOW_ID,
                "version": {"type": "integer", "minimum": 0, "description": "Default: the latest (0 = shipped)."},
                "inputs": {"type": "object", "maxProperties": 64, "description": "The process's inputs."},
            },
            ["workflow_id"],
        ),
        write=True,
        example={"workflow_id": "lead_follow_up", "inputs": {"lead_id": "lead_tsf_0001"}},
    ),
    _action(
        "workflow.get",
        "Get a workflow run",
        (
            "Fetch a run's current status, task states, waiting user tasks, execution log and artifacts. Use it to "
            "follow a run started with workflow.run."
        ),
        _schema({"run_id": RUN_ID}, ["run_id"]),
        write=False,
        example={"run_id": "run_0001"},
    ),
    _action(
        "workflow.complete_task",
        "Complete a workflow user task",
        (
            "Submit the data of a waiting user task (`waiting_tasks[].task_id`) and continue the run, from any "
            "replica. Answers `workflow.task_not_waiting` when the task is not waiting any more. Use it to answer a "
            "run that is waiting in input_required."
        ),
        _schema(
            {
                "run_id": RUN_ID,
                "task_id": {"type": "string", "maxLength": 64},
                "data": {"type": "object", "maxProperties": 64},
            },
            ["run_id", "task_id"],
        ),
        write=True,
        example={"run_id": "run_0001", "task_id": "approve", "data": {"approved": True}},
    ),
    _action(
        "workflow.resume",
        "Resume a workflow run",
        (
            "Continue a `running` run whose replica stopped before finishing (after its lease expired); outstanding "
            "service calls are made again. Other runs are returned unchanged. Use it when a run has stayed in "
            "`running` without progress."
        ),
        _schema({"run_id": RUN_ID}, ["run_id"]),
        write=True,
        example={"run_id": "run_0001"},
    ),
    _action(
        "workflow.cancel",
        "Cancel a workflow run",
        (
            "Stop a run that has not ended (`running` or `input_required`): it becomes `canceled` and its waiting "
            "user tasks can no longer be completed. A run that already ended is returned unchanged. Use it when a "
            "process is no longer wanted, e.g. the lead was lost."
        ),
        _schema({"run_id": RUN_ID}, ["run_id"]),
        write=True,
        example={"run_id": "run_0001"},
    ),
    _action(
        "workflow.list_runs",
        "List workflow runs",
        (
            "List the dealership's workflow runs, newest first. Use it to find runs waiting for input (status "
            "input_required) or that failed."
        ),
        _schema({"status": STATUS, "limit": {"type": "integer", "minimum": 1, "maximum": 100}}, []),
        write=False,
        example={"status": "input_required"},
    ),
)


def _admin(name: str, description: str, props: dict[str, Any], required: list[str], *, write: bool) -> Action:
    return admin_action(
        name, description, props, required, write=write, adapter=ADMIN_ADAPTER_ID, tags=("workflow",), idempotent=False
    )


WORKFLOW_ADMIN_ACTIONS: tuple[Action, ...] = (
    _admin(
        "admin.workflows.upload",
        "Upload a BPMN 2.0 definition for the company; it becomes the next version of `workflow_id`.",
        {"workflow_id": WORKFLOW_ID, "bpmn": {"type": "string", "minLength": 1, "maxLength": MAX_BPMN_BYTES}},
        ["workflow_id", "bpmn"],
        write=True,
    ),
    _admin(
        "admin.workflows.list", "List the company's workflow definitions and the shipped defaults.", {}, [], write=False
    ),
)


def _handler(run: Callable[[Mapping[str, Any], ExecutionContext], Awaitable[dict[str, Any]]]) -> Handler:
    async def handle(payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        output = await run(payload, context)
        metadata: dict[str, Any] = {}
        if "status" in output:
            metadata = {"status": output["status"], "workflow_id": output.get("workflow_id")}
        return AdapterResult(output=output, result_type=RESULT_TYPE, metadata=metadata)

    return handle


class WorkflowActions:
    """The ``workflow`` adapter: the ``workflow.*`` actions of one runner (one adapter, so a remote adapter host of
    the workflows family can stand in for it: ``adapters/remote``)."""

    id = "workflow"

    def __init__(self, handlers: Mapping[str, Handler]) -> None:
        self.handlers = dict(handlers)

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run ``context.action`` on the runner."""
        handler = self.handlers.get(context.action.name)
        if handler is None:
            raise UnknownAction(details={"action": context.action.name[:100]})
        return await handler(payload, context)


def register_workflows(catalogue: Catalogue) -> WorkflowRunner:
    """Add the ``workflow.*`` actions (run by a new :class:`WorkflowRunner`) and the admin definition actions."""
    runner = WorkflowRunner(catalogue)
    handlers = {
        "workflow.run": runner.start,
        "workflow.get": runner.get,
        "workflow.complete_task": runner.complete_task,
        "workflow.resume": runner.resume,
        "workflow.cancel": runner.cancel,
        "workflow.list_runs": runner.list_runs,
    }
    for action in WORKFLOW_ACTIONS:
        catalogue.add(action)
    catalogue.add_adapter(WorkflowActions({name: _handler(run) for name, run in handlers.items()}))
    for action in WORKFLOW_ADMIN_ACTIONS:
        catalogue.add(action)
    catalogue.add_adapter(WorkflowAdminAdapter())
    return runner
