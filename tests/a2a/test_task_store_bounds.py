"""The dealer agents' task store is bounded: a caller cannot grow a replica's memory one task at a time."""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import ListTasksRequest, Task, TaskState, TaskStatus

from forecourt.surfaces.a2a.owners import OWNER
from forecourt.surfaces.a2a.task_store import BoundedTaskStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _context(owner: str) -> ServerCallContext:
    return ServerCallContext(state={OWNER: owner})


def _task(task_id: str) -> Task:
    return Task(id=task_id, context_id=f"ctx-{task_id}", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))


async def test_past_the_limit_the_least_recently_saved_task_is_gone_and_the_rest_answer() -> None:
    store = BoundedTaskStore(limit=3, clock=Clock())
    keyed = _context("company:c1/member:m1")
    for n in range(5):
        await store.save(_task(f"t{n}"), keyed)
    assert len(store) == 3
    assert await store.get("t0", keyed) is None
    assert await store.get("t1", keyed) is None
    assert [t.id for t in (await store.list(ListTasksRequest(), keyed)).tasks] == ["t4", "t3", "t2"]


async def test_a_task_saved_again_counts_as_recent() -> None:
    store = BoundedTaskStore(limit=2, clock=Clock())
    keyed = _context("company:c1/member:m1")
    await store.save(_task("a"), keyed)
    await store.save(_task("b"), keyed)
    await store.save(_task("a"), keyed)  # a status update of the first task
    await store.save(_task("c"), keyed)
    assert await store.get("a", keyed) is not None
    assert await store.get("b", keyed) is None


async def test_a_task_past_its_age_is_not_answered_and_not_kept() -> None:
    clock = Clock()
    store = BoundedTaskStore(limit=100, max_age_s=60, clock=clock)
    keyed = _context("company:c1/member:m1")
    await store.save(_task("old"), keyed)
    clock.now += 30
    await store.save(_task("new"), keyed)
    clock.now += 31
    assert await store.get("old", keyed) is None
    assert await store.get("new", keyed) is not None
    assert len(store) == 1


async def test_the_bound_is_per_replica_across_owners_and_each_owner_sees_only_its_own() -> None:
    store = BoundedTaskStore(limit=2, clock=Clock())
    one, other = _context("company:c1/member:m1"), _context("company:c2/member:m9")
    await store.save(_task("mine"), one)
    await store.save(_task("theirs"), other)
    assert await store.get("theirs", one) is None
    await store.save(_task("third"), other)
    assert await store.get("mine", one) is None  # the oldest of the replica went, whoever owned it
    assert await store.get("theirs", other) is not None


async def test_deleting_a_task_frees_its_place() -> None:
    store = BoundedTaskStore(limit=2, clock=Clock())
    keyed = _context("company:c1/member:m1")
    await store.save(_task("a"), keyed)
    await store.save(_task("b"), keyed)
    await store.delete("a", keyed)
    await store.save(_task("c"), keyed)
    assert await store.get("b", keyed) is not None
    assert len(store) == 2
