"""The A2A task a call runs for, so that long-running work the call starts can end that task when it ends.

The gateway agent (``surfaces/a2a/task_executor.py``) runs a task's action inside :func:`running_for`. A job
runtime that stores what it started (``adapters/models/jobs.py``) reads :func:`link_for` and keeps the task on the
job's record, and notes the job on the link so the executor knows the job will report back by itself. When the job
ends, the model-job poller (``delivery/model_jobs.py``) hands a :class:`JobEnd` to the gateway agent, which ends
the task (``surfaces/a2a/task_ends.py``) on whichever replica announced it. While the job runs, the poller asks the
gateway agent about the job's :class:`LinkedTask`: a task canceled on a replica that does not run it has its job
canceled upstream by the poller.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskLink:
    """A task and the action its first message named (only that call, never one nested in it, takes the link)."""

    task_id: str
    owner: str
    """Who the task belongs to, as the task store keys it (``company/member``)."""
    action: str
    jobs: list[str] = field(default_factory=list)
    """The jobs the call started and stored with this link: each one ends the task when it ends."""


@dataclass(frozen=True)
class JobEnd:
    """A job linked to a task ended: what the task's end is made of."""

    task_id: str
    owner: str
    job: Mapping[str, Any]
    """The job as its actions answer it (``job_id``, ``status``, ``result``, ``error``, ...)."""
    result_type: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LinkedTask:
    """The task a running job was started for, as the model-job poller names it to the gateway agent."""

    task_id: str
    owner: str
    job_id: str


_LINK: ContextVar[TaskLink | None] = ContextVar("forecourt_task_link", default=None)


@contextmanager
def running_for(link: TaskLink) -> Iterator[None]:
    """Within this block calls run for ``link``'s task."""
    # forecourt.scoped does the same for the layers above; domain imports nothing of Forecourt but domain and errors.
    token = _LINK.set(link)
    try:
        yield
    finally:
        _LINK.reset(token)


def link_for(action: str) -> TaskLink | None:
    """The task the running call of ``action`` is for, if the call is the task's own action."""
    link = _LINK.get()
    return link if link is not None and link.action == action else None
