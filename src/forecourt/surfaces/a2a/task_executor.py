"""The ``AgentExecutor`` of the gateway agent: any catalogue action as an A2A task (seed 001 §9, seed 004 §5).

A dealer's own agents delegate work to Forecourt over A2A. A task's first message carries one DataPart
naming the action, in either of two shapes::

    {"action": "workflow.run", "payload": {...}}
    {"action": {"type": "workflow.run", "name": "workflow.run"}, "payload": {...}}   # seed 001's envelope

The action runs through ``Gateway.invoke`` as the caller (auth, scopes, tenancy, policy, limits, audit), and
the task follows the work:

- ``submitted`` → ``working`` → ``completed`` with a ``result`` artifact for an action that answers at once;
- a workflow run (``workflow.*``) streams its execution-log entries as a ``log`` artifact (appended chunks, the
  partial results of a stream) and keeps its latest run view in a ``run`` artifact. When the run stops at a
  user task (an approval, a first contact), the task becomes ``input-required`` with the waiting tasks in its
  status message; the next message on the same task, ``{"data": {...}, "task_id"?: "<user task id>"}``,
  completes that user task (``workflow.complete_task``) and the run continues. ``completed`` / ``failed``
  follow the run's end;
- a model or fine-tuning job whose answer is ``{job_id, state}`` (or ``status``) with a non-final state is polled
  through the action's sibling ``….get`` (when the catalogue has one), each new state a ``job`` artifact chunk,
  and the task ends with the job (``surfaces/a2a/jobs.py``). A job whose runtime stores it with the task (the model
  jobs: the call runs inside :func:`~forecourt.domain.task_links.running_for`) ends the task by itself, on
  whichever replica announces its end (``task_ends.py``): this executor never writes that end, and a replica that
  stops leaves nothing behind. Canceling the task calls the sibling ``….cancel``.

A refused or failed call makes the task ``failed`` with the error's stable ``code`` (never provider detail).
The executor keeps no state of its own: the run id lives in the task's ``run`` artifact, so the follow-up
message may reach any replica.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from a2a.helpers import get_data_parts, new_data_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.cluster import VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]  # no stubs installed

from forecourt.domain.task_links import TaskLink, running_for
from forecourt.errors import ApprovalPending, ApprovalRejected, ForecourtError, InternalError, InvalidParams
from forecourt.gateway.base import Invocation, Outcome, Principal
from forecourt.gateway.pipeline import Gateway
from forecourt.surfaces.a2a import jobs
from forecourt.surfaces.a2a.errors import JobStillRunning
from forecourt.surfaces.marks import a2a_metadata

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/json"
JOB_POLL_S = 2.0
"""How often a running model job is polled through its ``….get`` sibling."""
JOB_MAX_POLLS = 1800
"""How many polls a task follows a job for (an hour at ``JOB_POLL_S``)."""
TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


@dataclass(frozen=True)
class Request:
    """What a message asks for: an action with its payload, or the answer to a waiting user task."""

    action: str
    payload: dict[str, Any]
    claimed_type: str | None = None


def _first_data(message: Message | None) -> dict[str, Any]:
    if message is None or not message.parts:
        raise InvalidParams("The message carries no DataPart.")
    parts = get_data_parts(list(message.parts))
    if not parts or not isinstance(parts[0], dict):
        raise InvalidParams("The first part must be a DataPart (a JSON object).")
    found: dict[str, Any] = _integral(parts[0])
    return found


def _integral(value: Any) -> Any:
    """Protobuf ``Struct`` numbers come back as floats; integral ones become ints again."""
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def parse_request(data: Mapping[str, Any]) -> Request:
    """The action of a task's first message."""
    action = data.get("action")
    claimed: str | None = None
    if isinstance(action, Mapping):
        claimed = str(action["type"]) if action.get("type") else None
        action = action.get("name")
    payload = data.get("payload", {})
    if not isinstance(action, str) or not action or not isinstance(payload, Mapping):
        raise InvalidParams(
            "Name an action and its payload: {action, payload}.", details={"fields": ["action", "payload"]}
        )
    return Request(action=action, payload=dict(payload), claimed_type=claimed)


def _artifact(task: Task | None, name: str) -> dict[str, Any] | None:
    if task is None:
        return None
    for artifact in reversed(task.artifacts):
        if artifact.name == name:
            found = get_data_parts(list(artifact.parts))
            if found and isinstance(found[-1], dict):
                latest: dict[str, Any] = _integral(found[-1])
                return latest
    return None


def _message(task_id: str, context_id: str, data: dict[str, Any]) -> Message:
    from uuid import uuid4

    return Message(
        message_id=uuid4().hex,
        role=Role.ROLE_AGENT,
        task_id=task_id,
        context_id=context_id,
        parts=[new_data_part(data, media_type=MEDIA_TYPE)],
    )


def _part(data: Any) -> Part:
    return new_data_part(data, media_type=MEDIA_TYPE)


class GatewayTaskExecutor(AgentExecutor):
    """Runs catalogue actions as A2A tasks through the gateway."""

    def __init__(
        self,
        gateway: Gateway,
        *,
        tasks: VersionedTaskStore | None = None,
        job_poll_s: float | None = None,
        job_max_polls: int | None = None,
    ) -> None:
        self.gateway = gateway
        self.tasks = tasks
        """The shared task store: a followed job's task may end elsewhere (read before writing to it)."""
        self.job_poll_s = job_poll_s
        self.job_max_polls = job_max_polls

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Start, continue or answer a task."""
        task_id, context_id = str(context.task_id), str(context.context_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
            )
        try:
            await self._execute(context, updater)
        except ForecourtError as exc:
            await updater.failed(_message(task_id, context_id, {"error": _error(exc)}))
        except asyncio.CancelledError:
            raise
        except Exception:  # top of the surface: nothing internal leaves it
            logger.exception("unhandled error in an A2A task (task %s)", task_id)
            await updater.failed(_message(task_id, context_id, {"error": _error(InternalError())}))

    async def _execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        principal = _principal(context)
        current = context.current_task
        run = _artifact(current, "run")
        held = _artifact(current, "held")
        waiting = current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        if waiting and run:
            try:
                outcome = await self._complete_user_task(context, principal, run, _first_data(context.message))
            except InvalidParams as exc:  # a text reply, a missing field, an outcome the task does not know
                await self._ask_again(context, updater, run, exc)
                return
            await updater.start_work()
            await self._report(context, updater, principal, outcome, seen=len(run.get("log") or []))
            return
        data = _first_data(context.message)
        await updater.start_work()
        if waiting and held and held.get("approval_id"):
            # A call a policy held runs on approval by itself: continuing the task reads how it ended.
            found = await self._held_outcome(context, updater, principal, held)
            if found is None:
                return
            outcome = found
        else:
            request = parse_request(held if waiting and held else data)
            link = _link(context, request.action)
            try:
                with _running_for(link):
                    outcome = await self._invoke(
                        context, principal, request.action, request.payload, request.claimed_type
                    )
            except ApprovalPending as exc:
                await self._hold(context, updater, request, exc)
                return
            if link is not None and isinstance(outcome.output, dict) and outcome.output.get("job_id") in link.jobs:
                await self._follow_job(context, updater, principal, outcome, linked=True)
                return
        await self._report(context, updater, principal, outcome, seen=len((run or {}).get("log") or []))

    async def _ask_again(
        self, context: RequestContext, updater: TaskUpdater, run: dict[str, Any], exc: InvalidParams
    ) -> None:
        """Keep a waiting workflow task ``input-required`` after an answer it cannot take, saying what it expects.

        Nothing reached the run (the data is checked before the run is claimed), so it stays ``input_required`` too.
        """
        task_id, context_id = str(context.task_id), str(context.context_id)
        waiting = run.get("waiting_tasks") or []
        note = {
            "run_id": run.get("run_id"),
            "waiting_tasks": waiting,
            "error": exc.to_dict(),
            "expected": _expected(waiting),
        }
        await updater.requires_input(_message(task_id, context_id, note))

    async def _hold(
        self, context: RequestContext, updater: TaskUpdater, request: Request, exc: ApprovalPending
    ) -> None:
        """``input-required`` until a person decides: the status names the approval. The held call runs on approval
        (``gateway/held_calls.py``); any later message on the task reads how it ended (``approvals.get``): the
        task completes with its answer, fails with its error or ``approval.rejected``, or stays waiting."""
        task_id, context_id = str(context.task_id), str(context.context_id)
        action: Any = {"name": request.action, "type": request.claimed_type} if request.claimed_type else request.action
        held = {"action": action, "approval_id": exc.details.get("approval_id")}
        await updater.add_artifact([_part(held)], artifact_id=f"{task_id}-held", name="held")
        note = {"type": "approval.pending", **exc.to_dict(), "approval_id": exc.details.get("approval_id")}
        await updater.requires_input(_message(task_id, context_id, note))

    async def _held_outcome(
        self, context: RequestContext, updater: TaskUpdater, principal: Principal, held: dict[str, Any]
    ) -> Outcome | None:
        """The answer of a held call that ran on approval; ``None`` when the task stays or ends otherwise."""
        task_id, context_id = str(context.task_id), str(context.context_id)
        approval_id = str(held["approval_id"])
        view = (await self._invoke(context, principal, "approvals.get", {"approval_id": approval_id})).output
        status, result = view.get("status"), view.get("result")
        if status in ("pending", "approved"):
            note = {"type": "approval.pending", **ApprovalPending().to_dict(), "approval_id": approval_id}
            await updater.requires_input(_message(task_id, context_id, note))
            return None
        if status == "used" and isinstance(result, dict) and "output" in result:
            action = held.get("action")
            name = str(action.get("name") if isinstance(action, dict) else action)
            return Outcome(action=name, result_type=str(result.get("result_type") or name), output=result["output"])
        error = result.get("error") if isinstance(result, dict) else None
        if not isinstance(error, dict):
            error = ApprovalRejected(details={"approval_id": approval_id}).to_dict()
        await updater.failed(_message(task_id, context_id, {"error": error}))
        return None

    async def _invoke(
        self,
        context: RequestContext,
        principal: Principal,
        action: str,
        payload: dict[str, Any],
        claimed_type: str | None = None,
    ) -> Outcome:
        state = context.call_context.state if context.call_context else {}
        return await self.gateway.invoke(
            Invocation(
                action=action,
                payload=payload,
                principal=principal,
                surface="a2a",
                request_id=str(context.task_id),
                traceparent=(state.get("headers") or {}).get("traceparent"),
                session_id=str(context.context_id),
                claimed_type=claimed_type,
            )
        )

    async def _complete_user_task(
        self, context: RequestContext, principal: Principal, run: dict[str, Any], data: dict[str, Any]
    ) -> Outcome:
        waiting = run.get("waiting_tasks") or []
        user_task = data.get("task_id") or (waiting[0]["task_id"] if len(waiting) == 1 else None)
        if not user_task:
            raise InvalidParams("Name the waiting task to complete: {task_id, data}.", details={"field": "task_id"})
        answer = data.get("data", {})
        payload = {
            "run_id": run["run_id"],
            "task_id": str(user_task),
            "data": answer if isinstance(answer, dict) else {},
        }
        if run.get("dealership_id"):
            payload["dealership_id"] = run["dealership_id"]
        return await self._invoke(context, principal, "workflow.complete_task", payload)

    async def _report(
        self, context: RequestContext, updater: TaskUpdater, principal: Principal, outcome: Outcome, *, seen: int
    ) -> None:
        output = outcome.output
        task_id, context_id = str(context.task_id), str(context.context_id)
        if outcome.result_type == "workflow.run" and isinstance(output, dict) and "run_id" in output:
            await self._report_run(updater, output, seen, task_id, context_id)
            return
        if jobs.is_running_job(output):
            await self._follow_job(context, updater, principal, outcome, linked=False)
            return
        body = jobs.result_body(outcome.result_type, output, outcome.metadata)
        await updater.add_artifact([_part(body)], name="result", metadata=a2a_metadata(outcome))  # surfaces/marks.py
        await updater.complete()

    async def _report_run(
        self, updater: TaskUpdater, run: dict[str, Any], seen: int, task_id: str, context_id: str
    ) -> None:
        log = run.get("log") or []
        for index, entry in enumerate(log[seen:], start=seen):
            # The first chunk creates the artifact; later ones (in this call or a later one) append to it.
            await updater.add_artifact([_part(entry)], artifact_id=f"{task_id}-log", name="log", append=index > 0)
        await updater.add_artifact([_part(run)], artifact_id=f"{task_id}-run", name="run")
        status = run.get("status")
        if status == "input_required":
            waiting = {"run_id": run["run_id"], "waiting_tasks": run.get("waiting_tasks") or []}
            await updater.requires_input(_message(task_id, context_id, waiting))
        elif status == "completed":
            await updater.complete(
                _message(task_id, context_id, {"run_id": run["run_id"], "outputs": run.get("outputs")})
            )
        elif status == "failed":
            await updater.failed(_message(task_id, context_id, {"run_id": run["run_id"], "error": run.get("error")}))
        else:  # still running on a replica that stopped: workflow.resume continues it
            await updater.update_status(TaskState.TASK_STATE_WORKING, _message(task_id, context_id, {"run": status}))

    async def _follow_job(
        self, context: RequestContext, updater: TaskUpdater, principal: Principal, outcome: Outcome, *, linked: bool
    ) -> None:
        """Follow a running job through its ``….get`` sibling, each new state a chunk of the ``job`` artifact.

        A ``linked`` job (stored with this task) ends the task by itself when it ends, on whichever replica announces
        it: this request reports its progress while it runs and never writes the end; when the polls run out the
        task stays ``working`` until then. Any other job is ended here when ``….get`` answers a final state, and
        fails the task with ``a2a.job_still_running`` when the polls run out first: nothing else would end it.
        Each turn first reads the stored task: once it ended elsewhere (the job's end, or a cancel on another
        replica), this request stops without writing to it.
        """
        task_id, context_id = str(context.task_id), str(context.context_id)
        getter = _sibling(outcome.action, "get")
        pollable = self.gateway.catalogue.get(getter) is not None
        output = outcome.output
        if not linked and not pollable:  # nothing to follow it with: the first answer is the result
            await self._end_job(updater, outcome, output, task_id, context_id)
            return
        seen = jobs.job_state(output)
        await self._job_chunk(updater, outcome.action, output, task_id, first=True)
        for _ in range(self.job_max_polls if self.job_max_polls is not None else JOB_MAX_POLLS):
            await asyncio.sleep(self._poll_s())
            if await self._ended_elsewhere(context):
                await self._meet_the_end(updater, outcome.action, output, task_id)
                return
            if seen not in jobs.RUNNING or not pollable:  # a linked job's end is being written elsewhere
                continue
            output = (await self._invoke(context, principal, getter, {"job_id": output["job_id"]})).output
            state = jobs.job_state(output)
            if state == seen:
                continue
            seen = state
            if state in jobs.RUNNING or not linked:
                await self._job_chunk(updater, outcome.action, output, task_id)
            if state not in jobs.RUNNING and not linked:
                await self._end_job(updater, outcome, output, task_id, context_id)
                return
        if not linked:
            raise JobStillRunning(details={"job_id": output.get("job_id"), "status": seen, "get": getter})

    async def _job_chunk(
        self, updater: TaskUpdater, action: str, output: dict[str, Any], task_id: str, *, first: bool = False
    ) -> None:
        chunk = [_part(jobs.job_chunk(action, output))]
        await updater.add_artifact(chunk, artifact_id=f"{task_id}-job", name="job", append=not first)

    async def _end_job(
        self, updater: TaskUpdater, outcome: Outcome, output: Any, task_id: str, context_id: str
    ) -> None:
        """End the task with the job's final answer (``surfaces/a2a/jobs.py``)."""
        note = _message(task_id, context_id, jobs.end_note(output))
        state = jobs.end_state(output)
        if state == TaskState.TASK_STATE_FAILED:
            await updater.failed(note)
        elif state == TaskState.TASK_STATE_CANCELED:
            await updater.cancel(note)
        else:
            body = jobs.result_body(outcome.result_type, output, outcome.metadata)
            marks = a2a_metadata(outcome)
            await updater.add_artifact([_part(body)], artifact_id=f"{task_id}-result", name="result", metadata=marks)
            await updater.complete(note)

    async def _ended_elsewhere(self, context: RequestContext) -> bool:
        """Whether the stored task already ended (written by another part of the gateway or another replica).

        A task not stored yet (this request's first events still on their way) has not.
        """
        if self.tasks is None or context.call_context is None:
            return False
        stored = await self.tasks.get(str(context.task_id), context.call_context)
        return stored is not None and stored.task.status.state in TERMINAL

    async def _meet_the_end(self, updater: TaskUpdater, action: str, output: dict[str, Any], task_id: str) -> None:
        """Let this request learn the end written elsewhere, writing nothing.

        The request's next save is checked against the version it last wrote, which the end has moved on: the SDK
        reloads the ended task, hands it to this replica's subscribers (a blocking ``SendMessage`` answers it),
        drops the save and cancels this request, which waits for that here (returning first would have the SDK
        report the request's completion on queues it already closed).
        """
        await self._job_chunk(updater, action, output, task_id)
        await asyncio.sleep(self._poll_s())

    def _poll_s(self) -> float:
        return self.job_poll_s if self.job_poll_s is not None else JOB_POLL_S

    async def cancel_run(self, task: Task, call_context: ServerCallContext) -> None:
        """After ``CancelTask``: cancel the task's workflow run, if it has one (``workflow.cancel``, as the caller).

        Called by the request handler for every canceled task, whichever replica ran it (the SDK calls
        :meth:`cancel` only on the replica that holds the task). A run that already ended stays as it is.
        """
        run = _artifact(task, "run")
        principal = call_context.state.get("principal")
        if not run or not run.get("run_id") or not isinstance(principal, Principal):
            return
        payload = {"run_id": str(run["run_id"])}
        if run.get("dealership_id"):
            payload["dealership_id"] = str(run["dealership_id"])
        headers = call_context.state.get("headers") or {}
        try:
            await self.gateway.invoke(
                Invocation(
                    action="workflow.cancel",
                    payload=payload,
                    principal=principal,
                    surface="a2a",
                    request_id=task.id,
                    traceparent=headers.get("traceparent"),
                    session_id=task.context_id,
                )
            )
        except ForecourtError as exc:
            logger.info("workflow run cancel refused: %s", exc.code)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task; a model job is canceled upstream through the action's ``….cancel`` sibling."""
        task = context.current_task
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        job = _artifact(task, "job")
        result = _artifact(task, "result")
        action = str((result or {}).get("type") or "")
        if job and job.get("job_id") and context.call_context is not None:
            canceler = _sibling(str(job.get("action") or action), "cancel")
            if self.gateway.catalogue.get(canceler) is not None:
                try:
                    await self._invoke(context, _principal(context), canceler, {"job_id": job["job_id"]})
                except ForecourtError as exc:
                    logger.info("job cancel refused: %s", exc.code)
        await updater.cancel()


def _expected(waiting: list[Any]) -> str:
    """What an answer to a waiting workflow task must look like, in words."""
    parts = []
    for task in waiting if isinstance(waiting, list) else []:
        if not isinstance(task, dict):
            continue
        fields = list(task.get("required_fields") or [])
        outcome = task.get("outcome_field")
        values = task.get("outcome_values")
        need = [f"{outcome} one of {', '.join(map(str, values))}"] if outcome and values else []
        need += [f for f in fields if f != outcome]
        parts.append(f"{task.get('task_id')} ({task.get('bpmn_id')}): " + ("; ".join(need) or "any fields"))
    return (
        'A DataPart {"task_id": "<waiting task, optional when one waits>", "data": {...}} answering '
        + (" | ".join(parts) or "the waiting task")
        + "."
    )


def _link(context: RequestContext, action: str) -> TaskLink | None:
    """The task a call of its own action runs for (owned as the task store keys it)."""
    state = context.call_context.state if context.call_context else {}
    owner = state.get("owner")
    return TaskLink(task_id=str(context.task_id), owner=str(owner), action=action) if owner else None


def _running_for(link: TaskLink | None) -> AbstractContextManager[None]:
    return running_for(link) if link is not None else nullcontext()


def _sibling(action: str, verb: str) -> str:
    head, _, _ = action.rpartition(".")
    return f"{head}.{verb}" if head else verb


def _principal(context: RequestContext) -> Principal:
    state = context.call_context.state if context.call_context else {}
    principal = state.get("principal")
    if not isinstance(principal, Principal):
        from forecourt.errors import Unauthorized

        raise Unauthorized()
    return principal


def _error(exc: ForecourtError) -> dict[str, Any]:
    return exc.to_dict()


def task_view(task: Task) -> dict[str, Any]:
    """A task as JSON (tests and logs)."""
    view: dict[str, Any] = MessageToDict(task)
    return view
