"""Persistence of the model runtimes' long-running jobs (NVIDIA fine-tuning, Vertex AI batch prediction).

Writes are optimistic (``UPDATE ... WHERE revision = :read``): of two replicas polling one job only one writes
each change. A job's end is delivered once: :meth:`ModelJobs.claim_notification` sets ``notified_at`` only where
it is still empty, and only the caller that set it publishes the event. A job started by a task of the A2A gateway
agent keeps that task (``a2a_task_id``, ``a2a_task_owner``): the job's end ends it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from forecourt.store.base import Store, UnitOfWork
from forecourt.store.sa_asyncio import AsyncConnection
from forecourt.store.sql.model_jobs_tables import model_jobs

JOB_RESULT = "model.job"
"""The result type of every job action's answer."""
TERMINAL = frozenset({"succeeded", "failed", "cancelled"})
"""Statuses a job never leaves."""
STATUSES = ("pending", "running", "cancelling", *sorted(TERMINAL))
_J = model_jobs.c


def _conn(uow: UnitOfWork) -> Any:
    conn = getattr(uow, "connection", None)
    if conn is None:
        raise TypeError("model jobs need the SQL store")
    return conn


@dataclass(frozen=True)
class ModelJob:
    """One job as stored."""

    id: str
    company_id: str
    runtime: str
    kind: str
    remote_id: str
    status: str
    created_at: datetime
    updated_at: datetime
    remote_status: str | None = None
    request: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    created_by: str | None = None
    revision: int = 1
    next_poll_at: datetime | None = None
    finished_at: datetime | None = None
    notified_at: datetime | None = None
    a2a_task_id: str | None = None
    """The gateway agent's A2A task that started the job, if one did (never part of the job's view)."""
    a2a_task_owner: str | None = None

    @property
    def done(self) -> bool:
        """Whether the job ended."""
        return self.status in TERMINAL

    def view(self) -> dict[str, Any]:
        """The job as actions answer it."""
        out: dict[str, Any] = {
            "job_id": self.id,
            "runtime": self.runtime,
            "kind": self.kind,
            "status": self.status,
            "remote_status": self.remote_status,
            "remote_id": self.remote_id,
            "result": self.result,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }
        if self.error:
            out["error"] = self.error
        return out


def new_job_id() -> str:
    """A fresh job id (``job_`` + 24 hex digits)."""
    return f"job_{uuid.uuid4().hex[:24]}"


def _row(job: ModelJob) -> dict[str, Any]:
    return {name: getattr(job, name) for name in ModelJob.__dataclass_fields__}


def _job(row: Any) -> ModelJob:
    m = dict(row._mapping)
    m["request"] = dict(m["request"] or {})
    m["result"] = dict(m["result"] or {})
    return ModelJob(**m)


class ModelJobs:
    """The ``model_jobs`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def add(self, job: ModelJob) -> None:
        """Store a new job."""
        async with self.store.transaction() as uow:
            await _conn(uow).execute(sa.insert(model_jobs).values(**_row(job)))

    async def get(self, company_id: str, job_id: str) -> ModelJob | None:
        """The company's job, if it exists (another company's job does not)."""
        async with self.store.read() as uow:
            row = (
                await _conn(uow).execute(sa.select(model_jobs).where(_J.id == job_id, _J.company_id == company_id))
            ).first()
        return _job(row) if row is not None else None

    async def page(self, company_id: str, kind: str, *, status: str | None, offset: int, limit: int) -> list[ModelJob]:
        """The company's jobs of ``kind``, newest first."""
        query = sa.select(model_jobs).where(_J.company_id == company_id, _J.kind == kind)
        if status:
            query = query.where(_J.status == status)
        query = query.order_by(_J.created_at.desc(), _J.id.desc()).offset(offset).limit(limit)
        async with self.store.read() as uow:
            rows = (await _conn(uow).execute(query)).all()
        return [_job(r) for r in rows]

    async def update(self, job: ModelJob, **changes: Any) -> ModelJob | None:
        """Write ``changes`` if nobody wrote the job since ``job`` was read; the new job, or ``None`` if lost."""
        new = replace(job, **changes, revision=job.revision + 1)
        values = {k: v for k, v in _row(new).items() if k not in ("id", "company_id", "created_at")}
        async with self.store.transaction() as uow:
            conn: AsyncConnection = _conn(uow)
            result = await conn.execute(
                sa.update(model_jobs).where(_J.id == job.id, _J.revision == job.revision).values(**values)
            )
        return new if result.rowcount == 1 else None

    async def due(self, now: datetime, limit: int) -> list[ModelJob]:
        """Unfinished jobs whose next poll is due, oldest due first."""
        query = (
            sa.select(model_jobs)
            .where(_J.status.not_in(sorted(TERMINAL)), _J.next_poll_at <= now)
            .order_by(_J.next_poll_at)
            .limit(limit)
        )
        async with self.store.read() as uow:
            rows = (await _conn(uow).execute(query)).all()
        return [_job(r) for r in rows]

    async def unnotified(self, limit: int) -> list[ModelJob]:
        """Finished jobs whose end was not delivered yet."""
        query = (
            sa.select(model_jobs)
            .where(_J.status.in_(sorted(TERMINAL)), _J.notified_at.is_(None))
            .order_by(_J.finished_at)
            .limit(limit)
        )
        async with self.store.read() as uow:
            rows = (await _conn(uow).execute(query)).all()
        return [_job(r) for r in rows]

    async def claim_notification(self, job_id: str, now: datetime) -> bool:
        """Mark the job's end delivered; ``True`` only for the one caller that did (and so publishes it)."""
        async with self.store.transaction() as uow:
            result = await _conn(uow).execute(
                sa.update(model_jobs).where(_J.id == job_id, _J.notified_at.is_(None)).values(notified_at=now)
            )
        return bool(result.rowcount == 1)

    async def active_count(self, company_id: str, kind: str) -> int:
        """How many of the company's jobs of ``kind`` have not ended."""
        query = sa.select(sa.func.count()).where(
            _J.company_id == company_id, _J.kind == kind, _J.status.not_in(sorted(TERMINAL))
        )
        async with self.store.read() as uow:
            return int((await _conn(uow).execute(query)).scalar_one())
