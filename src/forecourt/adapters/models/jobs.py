"""Long-running model jobs (seed 001 §5: "Handles session state, memory, and long-running jobs"; "Manages
fine-tuning jobs"): one lifecycle for NVIDIA fine-tuning and Vertex AI batch prediction.

``create`` submits the job to the runtime and stores it (``model_jobs``) with its next poll time; ``get`` answers
the stored state, asking the runtime first when ``refresh: true`` (the background poller,
:mod:`forecourt.delivery.model_jobs`, calls exactly that for every due job); ``cancel`` asks the runtime to cancel;
``list`` pages the company's jobs. Normalised statuses: ``pending``, ``running``, ``cancelling``, then one of
``succeeded``, ``failed``, ``cancelled``. A job's end is delivered once as an event (``model.job.finished`` on the
event bus) by the poller. A job started by a task of the A2A gateway agent is stored with that task
(:func:`forecourt.domain.task_links.link_for`), and its end ends the task.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from forecourt.adapters.errors import JobNotFound
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.contract.paging import decode_cursor, encode_cursor, query_key
from forecourt.domain.task_links import link_for
from forecourt.store.model_jobs import JOB_RESULT, ModelJob, ModelJobs, new_job_id

logger = logging.getLogger(__name__)

DEFAULT_POLL_S = 30.0
MAX_PAGE = 100


@dataclass(frozen=True)
class RemoteState:
    """What the runtime says about a job."""

    remote_status: str
    status: str
    result: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None


class JobRuntime(Protocol):
    """A runtime's job API."""

    runtime: str
    kind: str

    async def submit(self, payload: Mapping[str, Any], context: ExecutionContext) -> tuple[str, RemoteState]:
        """Start the job; its remote id and first state."""
        ...

    async def fetch(self, job: ModelJob, context: ExecutionContext) -> RemoteState:
        """The job's current state."""
        ...

    async def cancel(self, job: ModelJob, context: ExecutionContext) -> RemoteState:
        """Ask the runtime to cancel; the state it answers."""
        ...


class JobHooks(Protocol):
    """What happens around a job's life (the GPU quota of fine-tuning jobs)."""

    async def before_submit(self, context: ExecutionContext, job_id: str) -> bool:
        """Admit the job (raise to refuse); whether something must be undone if submission fails."""
        ...

    async def after_end(self, context: ExecutionContext, job: ModelJob) -> None:
        """The job ended (or never started)."""
        ...


def poll_interval(config: Mapping[str, Any]) -> float:
    """``jobs.poll_interval_s`` of the adapter configuration (default 30 s)."""
    jobs = config.get("jobs") or {}
    value = jobs.get("poll_interval_s") if isinstance(jobs, Mapping) else None
    return float(value) if isinstance(value, int | float) and value > 0 else DEFAULT_POLL_S


class JobActions:
    """Runs ``<prefix>.create|get|cancel|list`` for one runtime's jobs."""

    def __init__(self, prefix: str, runtime: JobRuntime, hooks: JobHooks | None = None) -> None:
        self.prefix = prefix
        self.runtime = runtime
        self.hooks = hooks

    def handles(self, action: str) -> bool:
        """Whether ``action`` is one of these job actions."""
        return action.startswith(f"{self.prefix}.")

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the action."""
        verb = context.action.name.rsplit(".", 1)[-1]
        jobs = ModelJobs(context.store)
        if verb == "create":
            output: Any = (await self._create(jobs, payload, context)).view()
        elif verb == "list":
            output = await self._list(jobs, payload, context)
        else:
            job = await jobs.get(self._company(context), str(payload["job_id"]))
            if job is None:
                raise JobNotFound()
            if verb == "cancel":
                job = await self._cancel(jobs, job, context)
            elif payload.get("refresh"):
                job = await self.refresh(jobs, job, context)
            output = job.view()
        return AdapterResult(output=output, result_type=JOB_RESULT, metadata={"runtime": self.runtime.runtime})

    @staticmethod
    def _company(context: ExecutionContext) -> str:
        if not context.company_id:
            raise JobNotFound()
        return context.company_id

    async def _create(self, jobs: ModelJobs, payload: Mapping[str, Any], context: ExecutionContext) -> ModelJob:
        company = self._company(context)
        job_id = new_job_id()
        undo = await self.hooks.before_submit(context, job_id) if self.hooks is not None else False
        try:
            remote_id, state = await self.runtime.submit(payload, context)
        except BaseException:
            if undo and self.hooks is not None:
                await self.hooks.after_end(context, _placeholder(job_id, company, self.runtime, context))
            raise
        now = context.now
        link = link_for(context.action.name)
        job = ModelJob(
            id=job_id,
            company_id=company,
            runtime=self.runtime.runtime,
            kind=self.runtime.kind,
            remote_id=remote_id,
            status=state.status,
            remote_status=state.remote_status,
            request=dict(payload),
            result=state.result,
            error=state.error,
            created_by=context.principal.member_id or context.principal.subject,
            created_at=now,
            updated_at=now,
            next_poll_at=now + timedelta(seconds=poll_interval(context.adapter_config)),
            a2a_task_id=link.task_id if link is not None else None,
            a2a_task_owner=link.owner if link is not None else None,
        )
        await jobs.add(job)
        if link is not None:
            link.jobs.append(job.id)
        logger.info("%s job %s submitted (%s)", self.runtime.kind, job_id, state.status)
        return job

    async def refresh(self, jobs: ModelJobs, job: ModelJob, context: ExecutionContext) -> ModelJob:
        """Ask the runtime for the job's state and store it (a no-op for a job that ended)."""
        if job.done:
            return job
        return await self._store(jobs, job, await self.runtime.fetch(job, context), context)

    async def _cancel(self, jobs: ModelJobs, job: ModelJob, context: ExecutionContext) -> ModelJob:
        if job.done:
            return job
        return await self._store(jobs, job, await self.runtime.cancel(job, context), context)

    async def _store(self, jobs: ModelJobs, job: ModelJob, state: RemoteState, context: ExecutionContext) -> ModelJob:
        now = context.now
        ended = state.status in ("succeeded", "failed", "cancelled")
        updated = await jobs.update(
            job,
            status=state.status,
            remote_status=state.remote_status,
            result={**job.result, **state.result},
            error=state.error or job.error,
            updated_at=now,
            next_poll_at=None if ended else now + timedelta(seconds=poll_interval(context.adapter_config)),
            finished_at=now if ended else None,
        )
        if updated is None:  # another replica wrote it first: its write stands
            return await jobs.get(job.company_id, job.id) or job
        if ended:
            logger.info("%s job %s ended: %s", job.kind, job.id, state.status)
            if self.hooks is not None:
                await self.hooks.after_end(context, updated)
        return updated

    async def _list(self, jobs: ModelJobs, payload: Mapping[str, Any], context: ExecutionContext) -> dict[str, Any]:
        company = self._company(context)
        status = payload.get("status")
        key = query_key(context.action.name, None, {"company": company, "status": status})
        offset = decode_cursor(context.settings, payload.get("cursor"), key) if payload.get("cursor") else 0
        limit = min(int(payload.get("limit") or 20), MAX_PAGE)
        page = await jobs.page(company, self.runtime.kind, status=status, offset=offset, limit=limit + 1)
        out: dict[str, Any] = {"items": [j.view() for j in page[:limit]]}
        if len(page) > limit:
            out["next_cursor"] = encode_cursor(context.settings, offset + limit, key)
        return out


def _placeholder(job_id: str, company: str, runtime: JobRuntime, context: ExecutionContext) -> ModelJob:
    return ModelJob(
        id=job_id,
        company_id=company,
        runtime=runtime.runtime,
        kind=runtime.kind,
        remote_id="",
        status="failed",
        created_at=context.now,
        updated_at=context.now,
    )
