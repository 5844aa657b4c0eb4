"""The dealer agents' task store: the SDK's in-memory store, bounded in number and age.

A dealer agent keeps a task for a keyed caller's free-text search (so ``GetTask`` and ``ListTasks`` answer it) and
for a call held for approval. Any caller with a key could otherwise grow a replica's memory without end, one search
at a time. This store keeps at most ``limit`` tasks per replica and none older than ``max_age_s`` since its last
save: past either bound the least recently saved task is deleted, as ``DeleteTask`` would. A call held for approval
outlives its task: its answer stays readable through ``approvals.get`` (docs/aap.md).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task

from forecourt.surfaces.a2a.owners import task_owner

TASKS_KEPT = 10_000
"""Tasks a replica keeps at most (a task is a few kilobytes: a search's artifact and its status message)."""
TASK_MAX_AGE_S = 24 * 3600.0
"""How long a task is kept after it was last saved."""


class BoundedTaskStore(TaskStore):
    """An SDK task store that deletes the least recently saved task past ``limit`` tasks or ``max_age_s`` seconds."""

    def __init__(
        self,
        inner: TaskStore | None = None,
        *,
        limit: int = TASKS_KEPT,
        max_age_s: float = TASK_MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1 or max_age_s <= 0:
            raise ValueError("a task store keeps at least one task for a positive time")
        self.inner = inner if inner is not None else InMemoryTaskStore(owner_resolver=task_owner)
        """The store that holds the tasks (the SDK's in-memory store, resolving owners with ``task_owner``)."""
        self._limit = limit
        self._max_age_s = max_age_s
        self._clock = clock
        # (owner, task id) -> (when last saved, the context that saved it: what deleting it needs), oldest first
        self._kept: OrderedDict[tuple[str, str], tuple[float, ServerCallContext]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Save ``task`` for the context's owner, then drop what is past the bounds."""
        await self.inner.save(task, context)
        key = (task_owner(context), task.id)
        self._kept[key] = (self._clock(), context)
        self._kept.move_to_end(key)
        await self._drop_excess()

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The owner's task, unless it is past its age."""
        await self._drop_excess()
        return await self.inner.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The owner's tasks kept now."""
        await self._drop_excess()
        return await self.inner.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Delete the owner's task."""
        self._kept.pop((task_owner(context), task_id), None)
        await self.inner.delete(task_id, context)

    async def _drop_excess(self) -> None:
        oldest_allowed = self._clock() - self._max_age_s
        while self._kept:
            (_, task_id), (saved_at, context) = next(iter(self._kept.items()))
            if len(self._kept) <= self._limit and saved_at > oldest_allowed:
                return
            self._kept.popitem(last=False)
            await self.inner.delete(task_id, context)
