"""A job as an A2A task: which answers are running jobs, and the end a job gives its task.

An action's answer is a running job when it has a ``job_id`` and a non-final ``state`` (or ``status``, the model
jobs' field). The task ends with the job, whoever writes the end (the executor that follows it, or
:class:`~forecourt.surfaces.a2a.task_ends.TaskEnds` on the replica that announced the job's end):

- a job that succeeded (any final state that is not a failure or a cancellation): ``completed``, with the job's
  final answer as the ``result`` artifact ``{type, output, metadata}``;
- a failed job: ``failed``, with ``{job_id, status, error}`` in the status message (the job's own error, already
  client-safe, else ``a2a.job_failed``);
- a cancelled job: ``canceled``.

When the task followed the job, its end also appends the final state to the ``job`` artifact, the list of the
states the task saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from a2a.types import TaskState

from forecourt.surfaces.a2a.errors import JobFailed

RUNNING = frozenset(
    {"queued", "pending", "submitted", "running", "working", "created", "in_progress", "cancelling", "canceling"}
)
FAILED = frozenset({"failed", "error", "errored", "expired"})
CANCELED = frozenset({"cancelled", "canceled"})


def job_state(output: Mapping[str, Any]) -> str:
    """The job's state, lower-case (``state``, else ``status``)."""
    return str(output.get("state") or output.get("status") or "").lower()


def is_running_job(output: Any) -> bool:
    """Whether an action's answer is a job that has not ended."""
    return isinstance(output, Mapping) and bool(output.get("job_id")) and job_state(output) in RUNNING


def end_state(output: Mapping[str, Any]) -> TaskState:
    """The task state a job's final answer ends its task in."""
    state = job_state(output)
    if state in FAILED:
        return TaskState.TASK_STATE_FAILED
    if state in CANCELED:
        return TaskState.TASK_STATE_CANCELED
    return TaskState.TASK_STATE_COMPLETED


def end_note(output: Mapping[str, Any]) -> dict[str, Any]:
    """The status message of the task's end: the job and its final state (and error, when it failed)."""
    note: dict[str, Any] = {"job_id": output.get("job_id"), "status": job_state(output)}
    if end_state(output) == TaskState.TASK_STATE_FAILED:
        error = output.get("error")
        note["error"] = dict(error) if isinstance(error, Mapping) and error.get("code") else JobFailed().to_dict()
    return note


def job_chunk(action: str | None, output: Mapping[str, Any]) -> dict[str, Any]:
    """One chunk of the ``job`` artifact: the action that started the job and the job as it stands."""
    return {"action": action, **output} if action else dict(output)


def result_body(result_type: str, output: Any, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The ``result`` artifact's DataPart."""
    return {"type": result_type, "output": output, "metadata": dict(metadata)}
