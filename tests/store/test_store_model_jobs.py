"""The model_jobs table on SQLite and PostgreSQL: optimistic writes, due jobs, and one delivery of each end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from forecourt.store.model_jobs import ModelJob, ModelJobs, new_job_id

from .factories import tenancy_objects

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _job(company_id: str, **overrides: object) -> ModelJob:
    values: dict[str, object] = {
        "id": new_job_id(),
        "company_id": company_id,
        "runtime": "nvidia",
        "kind": "fine_tune",
        "remote_id": "cust-1",
        "status": "pending",
        "created_at": NOW,
        "updated_at": NOW,
        "request": {"config": "meta/llama-3.1-8b-instruct@v1", "dataset": {"name": "chats"}},
        "next_poll_at": NOW + timedelta(seconds=30),
    }
    values.update(overrides)
    return ModelJob(**values)  # type: ignore[arg-type]


async def test_a_job_reads_back_only_for_its_company_and_of_two_writers_of_one_revision_only_the_first_writes(store):
    company = tenancy_objects()[1].id
    job = _job(company)
    jobs = ModelJobs(store)
    await jobs.add(job)
    assert await jobs.get(company, job.id) == job
    assert await jobs.get("another-company", job.id) is None
    first = await jobs.update(job, status="running", remote_status="running")
    assert first is not None
    assert first.revision == 2
    assert await jobs.update(job, status="cancelled") is None  # read revision 1: lost the race
    assert (await jobs.get(company, job.id)).status == "running"  # type: ignore[union-attr]


async def test_due_jobs_are_the_unfinished_ones_whose_poll_time_came_and_each_end_is_delivered_once(store):
    company = tenancy_objects()[1].id
    jobs = ModelJobs(store)
    due = _job(company)
    later = _job(company, next_poll_at=NOW + timedelta(hours=1))
    ended = _job(company, status="failed", next_poll_at=None, finished_at=NOW, error={"code": "models.job_failed"})
    for job in (due, later, ended):
        await jobs.add(job)
    assert [j.id for j in await jobs.due(NOW + timedelta(minutes=1), 10)] == [due.id]
    assert await jobs.active_count(company, "fine_tune") == 2
    # An ended job is claimed for delivery exactly once.
    assert [j.id for j in await jobs.unnotified(10)] == [ended.id]
    assert await jobs.claim_notification(ended.id, NOW) is True
    assert await jobs.claim_notification(ended.id, NOW) is False
    assert await jobs.unnotified(10) == []
