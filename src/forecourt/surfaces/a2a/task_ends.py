"""Ends a gateway-agent task from outside its request: a held call that ran once a person approved it.

A task whose call a policy held waits in ``input-required`` (``task_executor.py``). When the call runs on approval
(``gateway/held_calls.py``, on whichever replica took the decision), :meth:`TaskEnds.held_ran` writes the end into
the shared task store the way the SDK writes a cancel from another replica — a new version of the task, checked
against the version read — publishes the events on the shared event stream (so a subscriber on any replica sees
them) and sends them to the task's push-notification webhooks: the answer as the ``result`` artifact and
``completed``, or ``failed`` with the call's error. The caller does not need to send anything more.
"""

from __future__ import annotations

import logging
from typing import Any

from a2a.server.cluster import ConcurrentTaskModificationError, TaskEventStream, VersionedEvent, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.tasks import PushNotificationSender
from a2a.types import Artifact, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent

from forecourt.domain.approvals import Approval
from forecourt.surfaces.a2a.task_executor import _artifact, _message, _part

logger = logging.getLogger(__name__)


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
            await self.events.publish(task_id, VersionedEvent(event=event, version=version))
            if self.push is not None:
                try:
                    await self.push.send_notification(task_id, event)
                except Exception:  # best effort, as for the SDK's own notifications
                    logger.warning("push notification for an ended A2A task failed", exc_info=True)
