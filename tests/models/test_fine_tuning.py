"""nvidia.fineTune.* against a loopback NeMo Customizer-compatible jobs API: persisted jobs, polling, the end as an
event, and the company's GPU job quota."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest

from forecourt.delivery.model_jobs import ModelJobPoller, channel
from forecourt.domain.task_links import JobEnd, TaskLink, running_for
from forecourt.errors import ForecourtError
from forecourt.gateway.base import Invocation, Principal
from forecourt.store.model_jobs import ModelJobs

from .support import MOTOR, Rig

CREATE = {
    "config": "meta/llama-3.1-8b-instruct@v1.0.0+A100",
    "dataset": {"name": "service-advisor-chats", "namespace": "demo-motor-group"},
    "hyperparameters": {"training_type": "sft", "finetuning_type": "lora", "epochs": 2, "lora": {"adapter_dim": 16}},
}


async def _create(rig: Rig, **extra: object) -> dict:
    return (await rig.invoke("nvidia.fineTune.create", {**CREATE, **extra})).output


async def _get(rig: Rig, job_id: str, *, refresh: bool = True) -> dict:
    return (await rig.invoke("nvidia.fineTune.get", {"job_id": job_id, "refresh": refresh})).output


async def test_a_fine_tuning_job_is_submitted_to_the_customizer_and_stored(rig, fakes):
    job = await _create(rig)
    assert job["status"] == "pending"
    assert job["remote_status"] == "created"
    assert job["remote_id"] == "cust-0001"
    assert job["job_id"].startswith("job_")
    assert fakes.customizer.created == [CREATE]
    stored = await _get(rig, job["job_id"], refresh=False)
    assert stored == job  # read back from the store, the Customizer not asked
    assert fakes.customizer.status_polls == 0


async def test_refreshing_a_job_follows_the_customizer_to_completion(rig, fakes):
    job_id = (await _create(rig))["job_id"]
    statuses = [(await _get(rig, job_id))["status"] for _ in range(3)]
    assert statuses == ["pending", "running", "succeeded"]
    done = await _get(rig, job_id)
    assert done["status"] == "succeeded"
    assert done["result"]["output_model"].startswith("default/meta/llama-3.1-8b-instruct-ft@")
    assert done["result"]["progress"]["percentage_done"] == 100.0
    assert done["finished_at"] is not None
    assert fakes.customizer.status_polls == 3  # an ended job is not polled again


async def test_a_job_that_fails_is_failed_with_a_stable_error_code(rig, fakes):
    job_id = (await _create(rig, config="fail-on-purpose@v1"))["job_id"]
    for _ in range(3):
        job = await _get(rig, job_id)
    assert job["status"] == "failed"
    assert job["error"] == {"code": "models.job_failed"}


async def test_the_poller_refreshes_due_jobs_and_announces_each_end_once(rig, fakes):
    job_id = (await _create(rig))["job_id"]
    poller = ModelJobPoller(rig.gateway, rig.services.backends.events)
    later = rig.gateway.clock() + timedelta(hours=1)
    async with rig.services.backends.events.subscribe(channel(MOTOR)) as events:
        rounds = [await poller.tick(later) for _ in range(4)]
        message = json.loads(await asyncio.wait_for(anext(events), timeout=5))
    assert rounds == [(1, 0), (1, 0), (1, 1), (0, 0)]  # polled while unfinished; the end announced once
    assert message["type"] == "model.job.finished"
    assert message["job"]["job_id"] == job_id
    assert message["job"]["status"] == "succeeded"
    assert "nvidia.fineTune.get" in await rig.audit_actions()  # polls run through the gateway, audited


async def test_a_job_started_for_an_a2a_task_keeps_the_task_and_a_call_nested_in_another_action_does_not(rig, fakes):
    own = TaskLink(task_id="task-own", owner=f"{MOTOR}/crm-agent", action="nvidia.fineTune.create")
    with running_for(own):
        linked = (await _create(rig))["job_id"]
    other = TaskLink(task_id="task-workflow", owner=f"{MOTOR}/crm-agent", action="workflow.run")
    with running_for(other):
        nested = (await _create(rig))["job_id"]
    jobs = ModelJobs(rig.gateway.store)
    stored, unlinked = await jobs.get(MOTOR, linked), await jobs.get(MOTOR, nested)
    assert own.jobs == [linked]
    assert other.jobs == []
    assert stored is not None
    assert (stored.a2a_task_id, stored.a2a_task_owner) == ("task-own", f"{MOTOR}/crm-agent")
    assert unlinked is not None
    assert unlinked.a2a_task_id is None
    assert "a2a_task_id" not in (await _get(rig, linked, refresh=False))  # the link is not part of the job's view


async def test_the_end_of_a_job_an_a2a_task_started_goes_to_the_task_before_the_announcement_and_again_if_it_failed(
    rig, fakes
):
    with running_for(TaskLink(task_id="task-1", owner=f"{MOTOR}/crm-agent", action="nvidia.fineTune.create")):
        job_id = (await _create(rig))["job_id"]
    poller = ModelJobPoller(rig.gateway, rig.services.backends.events)
    told: list[JobEnd] = []

    async def listener(end: JobEnd) -> None:
        told.append(end)
        if len(told) == 1:
            raise RuntimeError("the task store is away")

    poller.on_ended.append(listener)
    fakes.customizer.end("cust-0001", "completed")
    later = rig.gateway.clock() + timedelta(hours=1)
    rounds = [await poller.tick(later) for _ in range(3)]
    assert rounds == [(1, 0), (0, 1), (0, 0)]  # the listener failed: announced in the next round, after it ran
    assert [(end.task_id, end.owner, end.job["job_id"], end.job["status"]) for end in told] == [
        ("task-1", f"{MOTOR}/crm-agent", job_id, "succeeded")
    ] * 2
    assert told[0].result_type == "model.job"
    assert told[0].metadata == {"runtime": "nvidia"}


async def test_cancelling_an_unfinished_job_cancels_it_and_a_finished_one_stays_as_it_is(rig, fakes):
    job_id = (await _create(rig))["job_id"]
    cancelled = (await rig.invoke("nvidia.fineTune.cancel", {"job_id": job_id})).output
    assert cancelled["status"] == "cancelled"
    again = (await rig.invoke("nvidia.fineTune.cancel", {"job_id": job_id})).output
    assert again == cancelled


async def test_jobs_are_listed_newest_first_in_pages(rig, fakes):
    ids = [(await _create(rig))["job_id"] for _ in range(3)]
    first = (await rig.invoke("nvidia.fineTune.list", {"limit": 2})).output
    assert [j["job_id"] for j in first["items"]] == ids[::-1][:2]
    rest = (await rig.invoke("nvidia.fineTune.list", {"limit": 2, "cursor": first["next_cursor"]})).output
    assert [j["job_id"] for j in rest["items"]] == ids[:1]
    assert "next_cursor" not in rest


async def test_another_company_cannot_see_a_job(rig, fakes):
    job_id = (await _create(rig))["job_id"]
    other = Principal(method="internal", company_id="demo-bay-autos", member_id=None, subject="operator")
    with pytest.raises(ForecourtError) as info:
        await rig.gateway.invoke(Invocation(action="nvidia.fineTune.get", payload={"job_id": job_id}, principal=other))
    assert info.value.code == "models.job_not_found"


async def test_an_unknown_job_is_job_not_found(rig, fakes):
    with pytest.raises(ForecourtError) as info:
        await rig.invoke("nvidia.fineTune.get", {"job_id": "job_nope"})
    assert info.value.code == "models.job_not_found"


async def test_a_customizer_refusal_is_a_gateway_error_and_frees_the_job_slot(rig, fakes):
    await _set_policy(rig, {"gpu_job_slots": 1})
    fakes.customizer.faults.fail(422, {"detail": "dataset service-advisor-chats has no rows"})
    with pytest.raises(ForecourtError) as info:
        await _create(rig)
    assert info.value.code == "models.request_rejected"
    assert (await _create(rig))["status"] == "pending"  # the refused job did not keep the only slot


async def _set_policy(rig: Rig, rate_limits: dict[str, int]) -> None:
    await rig.operator(
        "admin.policies.upsert", {"company_id": MOTOR, "policy": {"id": "gpu", "rate_limits": rate_limits}}
    )


async def test_the_company_gpu_job_quota_admits_a_new_job_once_one_ends(rig, fakes):
    await _set_policy(rig, {"gpu_job_slots": 1})
    first = await _create(rig)
    with pytest.raises(ForecourtError) as info:
        await _create(rig)
    assert (info.value.code, info.value.retryable, info.value.http_status) == ("gpu.quota_exceeded", True, 429)
    await rig.invoke("nvidia.fineTune.cancel", {"job_id": first["job_id"]})
    assert (await _create(rig))["status"] == "pending"
