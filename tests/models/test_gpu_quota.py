"""GPU resource allocation: the slot pool's contract (memory and Redis) and the per-company inference quota."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from forecourt.adapters.models.slots import MemorySlotPool, RedisSlotPool, SlotPool
from forecourt.errors import ForecourtError

from .support import MOTOR, Rig

ADD_SUB = {
    "model": "add_sub",
    "inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
        {"name": "INPUT1", "datatype": "FP32", "shape": [1, 4], "data": [1, 1, 1, 1]},
    ],
    "outputs": ["OUTPUT0"],
    "model_version": "1",
}


@pytest.fixture(params=["memory", "redis"])
async def pool(request: pytest.FixtureRequest) -> AsyncIterator[SlotPool]:
    """Each slot pool implementation (Redis under this test's own key prefix)."""
    if request.param == "memory":
        yield MemorySlotPool()
        return
    from forecourt.redis_client import connect_redis

    url = request.getfixturevalue("redis_url")
    prefix = request.getfixturevalue("redis_prefix")
    made = RedisSlotPool(connect_redis(url), prefix, owns_client=True)
    yield made
    await made.aclose()


async def test_a_pool_admits_holders_up_to_its_limit_and_a_holder_renews_its_own_slot(pool):
    assert await pool.acquire("gpu:inference:c1", "a", 2, 60)
    assert await pool.acquire("gpu:inference:c1", "b", 2, 60)
    assert not await pool.acquire("gpu:inference:c1", "c", 2, 60)
    assert await pool.acquire("gpu:inference:c1", "a", 2, 60)  # renewing is not a new slot
    assert await pool.acquire("gpu:inference:c2", "c", 2, 60)  # another company's slots are its own
    assert await pool.held("gpu:inference:c1") == 2


async def test_a_released_slot_admits_the_next_holder(pool):
    assert await pool.acquire("gpu:jobs:c1", "a", 1, 60)
    assert not await pool.acquire("gpu:jobs:c1", "b", 1, 60)
    await pool.release("gpu:jobs:c1", "a")
    assert await pool.acquire("gpu:jobs:c1", "b", 1, 60)


async def test_an_expired_lease_frees_its_slot(pool):
    assert await pool.acquire("gpu:jobs:c1", "gone-replica", 1, 0.05)
    deadline = time.monotonic() + 5
    while not await pool.acquire("gpu:jobs:c1", "next", 1, 60):  # bounded wait for the 50 ms lease to lapse
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    assert await pool.held("gpu:jobs:c1") == 1


async def _held(rig: Rig) -> int:
    adapter = rig.services.catalogue.adapter_for(rig.services.catalogue.get("nvidia.runInference"))
    pool = adapter.quota._pool
    return 0 if pool is None else await pool.held(f"gpu:inference:{MOTOR}")


async def test_the_company_inference_quota_refuses_a_call_while_its_slots_are_busy(rig, fakes):
    await rig.operator(
        "admin.policies.upsert",
        {"company_id": MOTOR, "policy": {"id": "gpu", "rate_limits": {"gpu_inference_slots": 1}}},
    )
    fakes.triton.faults.hang = True
    first = asyncio.create_task(rig.invoke("nvidia.runInference", ADD_SUB))
    deadline = time.monotonic() + 60  # bounded wait until the first call holds the only slot (a loaded CI machine)
    while await _held(rig) < 1:
        assert not first.done(), f"the first call ended before holding a slot: {first.exception()!r}"
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("nvidia.runInference", ADD_SUB)
    assert (info.value.code, info.value.http_status, info.value.retryable) == ("gpu.quota_exceeded", 429, True)
    fakes.triton.faults.release()
    assert (await first).output["outputs"][0]["data"] == [2, 3, 4, 5]
    assert await _held(rig) == 0  # the finished call gave its slot back
    assert (await rig.invoke("nvidia.runInference", ADD_SUB)).result_type == "model.inference"


async def test_replicas_sharing_redis_count_the_same_slots(redis_url, redis_prefix):
    from forecourt.redis_client import connect_redis

    replicas = [RedisSlotPool(connect_redis(redis_url), redis_prefix, owns_client=True) for _ in range(2)]
    try:
        assert await replicas[0].acquire(f"gpu:jobs:{MOTOR}", "job-a", 1, 60)
        assert not await replicas[1].acquire(f"gpu:jobs:{MOTOR}", "job-b", 1, 60)
        await replicas[0].release(f"gpu:jobs:{MOTOR}", "job-a")
        assert await replicas[1].acquire(f"gpu:jobs:{MOTOR}", "job-b", 1, 60)
    finally:
        for replica in replicas:
            await replica.aclose()
