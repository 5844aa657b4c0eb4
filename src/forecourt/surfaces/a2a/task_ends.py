"""Ends a gateway-agent task from outside its request: a held call that ran once a person approved it, or a job
the task started that ended.

A task whose call a policy held waits in ``input-required`` (``task_executor.py``). When the call runs on approval
(``gateway/held_calls.py``, on whichever replica took the decision), :meth:`TaskEnds.held_ran` writes the end into
the shared task store the way the SDK writes a cancel from another replica — a new version of the task, checked
against the version read — publishes the events on the shared event stream (so a subscriber on any replica sees
them) and sends them to the task's push-notification webhooks: the answer as the ``result`` artifact and
``completed``, or ``failed`` with the call's error. The caller does not need to send anything more.

A model job an A2A task started is stored with the task (``domain/task_links.py``); when the job ends, the model-job
poller of whichever replica announces the end calls :meth:`TaskEnds.job_ended`, which ends the task as
``surfaces/a2a/jobs.py`` says (``completed`` with the ``result``, ``failed`` with the error, or ``canceled``). Each
event is one new version of the task, checked against the version read, in the SDK's own way
(:class:`~a2a.server.tasks.TaskManager`), so every event also lands in the shared event log. A task that already
ended is left alone, and a write that meets a newer version reads the task again: of two replicas ending one task,
or of this and a live executor, the end is written once. The executor that started the job never writes its end.

A task canceled on a replica that does not run it is only written ``canceled``: its executor never hears of it. The
poller asks :meth:`TaskEnds.job_canceled` about each running job a task started and cancels the job upstream when
the task is ``canceled``.
"""

from __future__ import annotations

import logging
from typing import Any

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationSender, TaskManager
from a2a.types import Artifact, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent

from forecourt.domain.approvals import Approval
from forecourt.domain.task_links import JobEnd, LinkedTask
from forecourt.surfaces.a2a import jobs
from forecourt.surfaces.a2a.task_executor import TERMINAL, _artifact, _message, _part

logger = logging.getLogger(__name__)

WRITE_ATTEMPTS = 5
"""How many times a job's end is tried against a task that keeps changing under it."""
TaskEvent = TaskArtifactUpdateEvent | TaskStatusUpdateEvent


class TaskEnds:
    """Writes the end of a waiting task that another part of the gateway finished."""

    def __init__(
        self, store: VersionedTaskStore, events: TaskEventStream, push: PushNotificationSender | None = None
    ) -> None:
        self.store = store
        self.events = events
        self.push = push

    async def held_ran(self, approval: Approval, result: dict[str, Any]) -> None:
        """The held call of ``approval`` ran: end the gateway-agent task that waited for it, if there is one."""
        task_id = (approval.held or {}).get("request_id")
        if approval.surface != "a2a" or not isinstance(task_id, str) or not task_id:
            return
        context = ServerCallContext(state={"owner": f"{approval.company_id}/{approval.member_id or '-'}"})
        stored = await self.store.get(task_id, context)
        if stored is None:  # a dealer agent's AAP task, or one that is gone
            return
        task = stored.task
        held = _artifact(task, "held")
        if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED or (held or {}).get("approval_id") != approval.id:
            return
        events: list[TaskArtifactUpdateEvent | TaskStatusUpdateEvent] = []
        ended = Task()
        ended.CopyFrom(task)
        if "output" in result:
            action = (held or {}).get("action")
            name = str(action.get("name") if isinstance(action, dict) else action)
            body = {"type": result.get("result_type") or name, "output": result["output"], "metadata": {}}
            artifact = Artifact(artifact_id=f"{task_id}-result", name="result", parts=[_part(body)])
            ended.artifacts.append(artifact)
            events.append(TaskArtifactUpdateEvent(task_id=task_id, context_id=task.context_id, artifact=artifact))
            state = TaskState.TASK_STATE_COMPLETED
            note: dict[str, Any] = {"approval_id": approval.id, "status": "ran"}
        else:
            state, note = TaskState.TASK_STATE_FAILED, {"approval_id": approval.id, "error": result.get("error")}
        ended.status.CopyFrom(TaskStatus(state=state, message=_message(task_id, task.context_id, note)))
        events.append(TaskStatusUpdateEvent(task_id=task_id, context_id=task.context_id, status=ended.status))
        try:
            version = await self.store.save(
                ended, event=events[-1], prev=task, prev_version=stored.version, context=context
            )
        except ConcurrentTaskModificationError:
            # The caller continued the task meanwhile; that request reads the outcome itself.
            logger.info("a held call's task changed while it was being ended (task %s)", task_id)
            return
        # One new version holds the whole end; its events go out in order (the artifact, then the status).
        for event in events:
            await self._deliver(task_id, event, version)

    async def job_ended(self, end: JobEnd) -> None:
        """The job ``end`` names ended: end the task that started it, unless the task already ended."""
        context = ServerCallContext(state={"owner": end.owner})
        for _ in range(WRITE_ATTEMPTS):
            manager = TaskManager(
                task_store=self.store, context=context, task_id=end.task_id, context_id=None, initial_message=None
            )
            task = await manager.get_task()
            if task is None or task.status.state in TERMINAL:  # gone, or ended already (canceled, or told before)
                return
            try:
                for event in _job_end_events(task, end):
                    await manager.save_task_event(event)
                    await self._deliver(end.task_id, event, manager.current_version)
            except ConcurrentTaskModificationError:
                continue  # written meanwhile (a progress chunk, or the same end from another replica): read again
            return
        logger.warning("an A2A task kept changing while its job's end was written (task %s)", end.task_id)

    async def job_canceled(self, linked: LinkedTask) -> bool:
        """Whether the task that started the running job ``linked`` names was canceled."""
        stored = await self.store.get(linked.task_id, ServerCallContext(state={"owner": linked.owner}))
        return stored is not None and stored.task.status.state == TaskState.TASK_STATE_CANCELED

    async def _deliver(self, task_id: str, event: TaskEvent, version: TaskVersion) -> None:
        """Publish a written event on the shared stream and send it to the task's webhooks."""
        await self.events.publish(task_id, VersionedEvent(event=event, version=version))
        if self.push is not None:
            try:
                await self.push.send_notification(task_id, event)
            except Exception:  # best effort, as for the SDK's own notifications
                logger.warning("push notification for an ended A2A task failed", exc_info=True)


def _job_end_events(task: Task, end: JobEnd) -> list[TaskEvent]:
    """What the task still lacks of the job's end: the final ``job`` chunk, the ``result``, the final status."""
    task_id, context_id, job = task.id, task.context_id, end.job
    events: list[TaskEvent] = []
    last = _artifact(task, "job")
    if last is None or jobs.job_state(last) != jobs.job_state(job):
        action = last.get("action") if last else None
        chunk = Artifact(artifact_id=f"{task_id}-job", name="job", parts=[_part(jobs.job_chunk(action, job))])
        events.append(
            TaskArtifactUpdateEvent(task_id=task_id, context_id=context_id, artifact=chunk, append=last is not None)
        )
    state = jobs.end_state(job)
    done = any(a.artifact_id == f"{task_id}-result" for a in task.artifacts)
    if state == TaskState.TASK_STATE_COMPLETED and not done:
        body = jobs.result_body(end.result_type, dict(job), end.metadata)
        result = Artifact(artifact_id=f"{task_id}-result", name="result", parts=[_part(body)])
        events.append(TaskArtifactUpdateEvent(task_id=task_id, context_id=context_id, artifact=result))
    status = TaskStatus(state=state, message=_message(task_id, context_id, jobs.end_note(job)))
    events.append(TaskStatusUpdateEvent(task_id=task_id, context_id=context_id, status=status))
    return events
