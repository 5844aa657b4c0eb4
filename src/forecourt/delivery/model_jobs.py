"""Polls the model runtimes' long-running jobs and delivers each job's end as an event.

Every few seconds the poller asks the store for unfinished jobs whose ``next_poll_at`` has come and runs the job's
``get`` action with ``refresh: true`` through the gateway, as the operator acting for the job's company (so the
call gets the adapter's configuration and a per-call credential like any other, and is audited). Then every job
that ended and was not yet announced is claimed (``notified_at``, set by exactly one replica) and published on
the event bus, channel ``model-jobs.{company_id}``::

    {"type": "model.job.finished", "company_id": ..., "job": {job_id, runtime, kind, status, result, ...}}

A job that an A2A task of the gateway agent started (its record names the task) first has its end handed to the
``on_ended`` listeners (the gateway agent ends the task: ``surfaces/a2a/task_ends.py``), then is announced. A
listener runs before the claim so that a replica stopping between the two leaves both to the next round; the task's
end is written once whatever the number of tries (a version-checked write that nothing writes after the end). A
listener that fails leaves the job unannounced, and the next round tries both again.

A task can be canceled on a replica that does not run it (or after the replica that started it stopped): the task is
written ``canceled`` and nothing else happens. So before polling a linked job that has not ended, the poller asks the
``task_canceled`` listeners (the gateway agent reads the task) and, when its task is ``canceled``, runs the job's
``cancel`` action instead of ``get``, as the same internal principal. A cancel that fails is logged with its error
code and the job is polled as usual: a job that ended meanwhile ends as it ended (the task, already ``canceled``,
is left alone), one still running is canceled again at its next poll. The cancelled job is then announced once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from forecourt.domain.task_links import JobEnd, LinkedTask
from forecourt.errors import ForecourtError
from forecourt.gateway.base import Invocation, Principal
from forecourt.store.model_jobs import JOB_RESULT, ModelJob, ModelJobs

if TYPE_CHECKING:
    from forecourt.gateway.backends.events import EventBus
    from forecourt.gateway.pipeline import Gateway

logger = logging.getLogger(__name__)

TICK_S = 5.0
BATCH = 50
RETRY_AFTER_FAILURE_S = 60.0
GET_ACTIONS = {
    ("nvidia", "fine_tune"): "nvidia.fineTune.get",
    ("vertex", "batch_prediction"): "vertex.batchPredict.get",
}
CANCEL_ACTIONS = {
    ("nvidia", "fine_tune"): "nvidia.fineTune.cancel",
    ("vertex", "batch_prediction"): "vertex.batchPredict.cancel",
}
EVENT_TYPE = "model.job.finished"
JobEndListener = Callable[[JobEnd], Awaitable[None]]
TaskCanceledListener = Callable[[LinkedTask], Awaitable[bool]]


def channel(company_id: str) -> str:
    """The event-bus channel of a company's model-job events."""
    return f"model-jobs.{company_id}"


class ModelJobPoller:
    """The background task; :meth:`tick` is one round (tests call it directly)."""

    def __init__(self, gateway: Gateway, bus: EventBus, *, tick_s: float = TICK_S) -> None:
        self.gateway = gateway
        self.jobs = ModelJobs(gateway.store)
        self.bus = bus
        self.tick_s = tick_s
        self.on_ended: list[JobEndListener] = []
        """Told the end of every job an A2A task started, before the job is announced."""
        self.task_canceled: list[TaskCanceledListener] = []
        """Asked, before a running job an A2A task started is polled, whether that task was canceled."""

    async def run(self) -> None:
        """Poll until cancelled; a failing round is logged and the next one runs."""
        while True:
            try:
                await self.tick()
            except ForecourtError as exc:
                logger.warning("model job poll round failed: %s", exc.code)
            await asyncio.sleep(self.tick_s)

    async def tick(self, now: datetime | None = None) -> tuple[int, int]:
        """Refresh the due jobs, then announce the ended ones; how many of each."""
        now = now or self.gateway.clock()
        polled = 0
        for job in await self.jobs.due(now, BATCH):
            if await self._task_canceled(job):
                await self._cancel(job, now)
            else:
                await self._refresh(job, now)
            polled += 1
        announced = 0
        for job in await self.jobs.unnotified(BATCH):
            if not await self._tell_task(job):
                continue
            if await self.jobs.claim_notification(job.id, now):
                message = {"type": EVENT_TYPE, "company_id": job.company_id, "job": job.view()}
                await self.bus.publish(channel(job.company_id), json.dumps(message).encode())
                announced += 1
        return polled, announced

    async def _tell_task(self, job: ModelJob) -> bool:
        """Hand the end of a job an A2A task started to the listeners; ``False`` when one of them failed."""
        if not job.a2a_task_id or not job.a2a_task_owner:
            return True
        end = JobEnd(
            task_id=job.a2a_task_id,
            owner=job.a2a_task_owner,
            job=job.view(),
            result_type=JOB_RESULT,
            metadata={"runtime": job.runtime},
        )
        for listener in self.on_ended:
            try:
                await listener(end)
            except Exception:  # the job stays unannounced: the next round tells the task again, then announces
                logger.exception("ending the A2A task of %s job %s failed", job.kind, job.id)
                return False
        return True

    async def _task_canceled(self, job: ModelJob) -> bool:
        """Whether the A2A task that started the job was canceled (a job no task started: never)."""
        if not job.a2a_task_id or not job.a2a_task_owner or (job.runtime, job.kind) not in CANCEL_ACTIONS:
            return False
        if job.status == "cancelling":  # canceled already: polled until it ends
            return False
        linked = LinkedTask(task_id=job.a2a_task_id, owner=job.a2a_task_owner, job_id=job.id)
        for listener in self.task_canceled:
            try:
                if await listener(linked):
                    return True
            except Exception:  # the job is polled as usual; the next round asks again
                logger.exception("reading the A2A task of %s job %s failed", job.kind, job.id)
        return False

    async def _cancel(self, job: ModelJob, now: datetime) -> None:
        """Cancel the job upstream; when that fails, poll it (it may have ended meanwhile) and cancel it next time."""
        payload = {"job_id": job.id}
        try:
            await self.gateway.invoke(
                Invocation(action=CANCEL_ACTIONS[(job.runtime, job.kind)], payload=payload, principal=_principal(job))
            )
        except ForecourtError as exc:
            await self._refresh(job, now)
            current = await self.jobs.get(job.company_id, job.id)
            if current is not None and current.done:
                logger.info("%s job %s of a canceled task had ended: %s", job.kind, job.id, current.status)
            else:
                logger.warning("canceling %s job %s of a canceled task failed: %s", job.kind, job.id, exc.code)
            return
        logger.info("%s job %s asked to cancel: its task was canceled", job.kind, job.id)

    async def _refresh(self, job: ModelJob, now: datetime) -> None:
        action = GET_ACTIONS.get((job.runtime, job.kind))
        if action is None:
            return
        inv = Invocation(action=action, payload={"job_id": job.id, "refresh": True}, principal=_principal(job))
        try:
            await self.gateway.invoke(inv)
        except ForecourtError as exc:
            logger.warning("polling %s job %s failed: %s", job.kind, job.id, exc.code)
            current = await self.jobs.get(job.company_id, job.id)
            if current is not None and not current.done:
                await self.jobs.update(current, next_poll_at=now + timedelta(seconds=RETRY_AFTER_FAILURE_S))


def _principal(job: ModelJob) -> Principal:
    """The internal principal acting for the job's company."""
    return Principal(method="internal", company_id=job.company_id, member_id=None, subject="model-jobs")
