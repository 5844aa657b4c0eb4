"""What clients see of a run: status, task states, waiting user tasks, execution log, artifacts, outputs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from forecourt.adapters.workflow import engine
from forecourt.adapters.workflow.repository import RunRecord
from forecourt.errors import InvalidParams

_FIELD = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_INTERNAL_KEYS = frozenset({"inputs", "artifacts", "run"})


def _csv(value: Any) -> list[str]:
    return [p.strip() for p in str(value or "").split(",") if p.strip()]


def _lookup(data: Mapping[str, Any], path: Any) -> Any:
    if not path:
        return None
    value: Any = data
    for part in str(path).split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _properties(task: Any) -> dict[str, Any]:
    return dict((task.task_spec.extensions or {}).get("properties") or {})


def waiting_task_view(task: Any) -> dict[str, Any]:
    """A user task waiting for ``workflow.complete_task``: what to do, by whom, by when, with which fields."""
    spec = task.task_spec
    props = _properties(task)
    return {
        "task_id": str(task.id),
        "bpmn_id": spec.bpmn_id,
        "name": getattr(spec, "bpmn_name", None) or spec.bpmn_id,
        "type": engine.type_of(spec),
        "instructions": (spec.extensions or {}).get("instructionsForEndUser"),
        "role": props.get("role"),
        "assignee": _lookup(task.data, props.get("assignee_variable")),
        "due_at": _lookup(task.data, props.get("due_at_variable")),
        "required_fields": _csv(props.get("required_fields")),
        "outcome_field": props.get("outcome_field", "outcome") if props.get("outcome_values") else None,
        "outcome_values": _csv(props.get("outcome_values")) or None,
    }


def validate_submission(task: Any, data: Mapping[str, Any]) -> None:
    """Check the data a caller submits for a user task (field names, required fields, allowed outcomes).

    Raises:
        InvalidParams: With the offending field paths.
    """
    view = waiting_task_view(task)
    problems: list[dict[str, str]] = [
        {"path": f"/data/{key[:64]}", "rule": "field_name"} for key in data if not _FIELD.match(str(key))
    ]
    problems += [{"path": f"/data/{f}", "rule": "required"} for f in view["required_fields"] if f not in data]
    outcome_field, allowed = view["outcome_field"], view["outcome_values"]
    if allowed and outcome_field in data and data[outcome_field] not in allowed:
        problems.append({"path": f"/data/{outcome_field}", "rule": "enum"})
    if problems:
        raise InvalidParams("The task data is invalid.", details={"errors": problems[:5]})


def run_view(record: RunRecord, workflow: Any) -> dict[str, Any]:
    """The full state of a run (the output of ``workflow.run``, ``workflow.get`` and friends)."""
    waiting = engine.waiting_user_tasks(workflow) if record.status == "input_required" else []
    outputs: dict[str, Any] | None = None
    if record.status == "completed":
        outputs = {k: v for k, v in engine.result_data(workflow).items() if k not in _INTERNAL_KEYS}
    return {
        **summary_view(record),
        "tasks": engine.task_states(workflow),
        "waiting_tasks": [waiting_task_view(t) for t in waiting],
        "log": list(record.log),
        "artifacts": dict(record.artifacts),
        "outputs": outputs,
        "error": record.error,
    }


def summary_view(record: RunRecord) -> dict[str, Any]:
    """A run without its task tree (for listings)."""
    return {
        "run_id": record.id,
        "workflow_id": record.workflow_id,
        "version": record.version,
        "dealership_id": record.dealership_id,
        "status": record.status,
        "revision": record.revision,
        "started_by": record.started_by,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
    }
