"""A message to a task that has ended is refused before the a2a-sdk builds a turn for it.

The SDK (1.3.0) answers such a message with ``UnsupportedOperationError`` only after it has created the task's
``ActiveTask``, whose constructor starts two event-queue dispatcher tasks; when ``ActiveTask.start`` then refuses the
ended task it marks itself finished without closing those queues, so their pending tasks are collected later and
logged at ERROR ("Task was destroyed but it is pending", and OpenTelemetry's "Failed to detach context" for the
spans they held). That is inside the SDK; Forecourt avoids the path: both agents' request handlers read the stored
task first and give the same answer the SDK gives (a terminal task takes no more messages, A2A v1.0 §3.1.1), so no
``ActiveTask`` is made for it.
"""

from __future__ import annotations

from typing import Any

from a2a.server.context import ServerCallContext
from a2a.types import SendMessageRequest, Task, TaskState
from a2a.utils.errors import UnsupportedOperationError

ENDED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


async def stored_task(store: Any, task_id: str, context: ServerCallContext) -> Task | None:
    """The task ``task_id`` as the caller may read it (a versioned store answers it with its version)."""
    stored = await store.get(task_id, context)
    found = getattr(stored, "task", stored)
    return found if isinstance(found, Task) else None


def refuse_if_ended(params: SendMessageRequest, task: Task | None) -> None:
    """Raise the SDK's own refusal when ``params`` continues ``task`` and ``task`` has ended."""
    if task is not None and task.status.state in ENDED:
        state = TaskState.Name(task.status.state)
        raise UnsupportedOperationError(message=f"Task {params.message.task_id} is in terminal state: {state}")
