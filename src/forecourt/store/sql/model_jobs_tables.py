"""The model runtimes' long-running jobs: NVIDIA fine-tuning (NeMo Customizer) and Vertex AI batch prediction.

One row per job a company started through Forecourt: the runtime's own id (``remote_id``), the normalised status
(``pending``, ``running``, ``cancelling``, ``succeeded``, ``failed``, ``cancelled``) and the runtime's own, the
request and result, and when it is next polled. ``revision`` is an optimistic-concurrency counter (two replicas
polling one job never both write it); ``notified_at`` is set once the job's end was delivered as an event.
``a2a_task_id`` and ``a2a_task_owner`` name the gateway agent's A2A task that started the job, if one did: the
job's end ends that task.
"""

from __future__ import annotations

import sqlalchemy as sa

from forecourt.store.sql.tables import JSONType, UtcDateTime, metadata

model_jobs = sa.Table(
    "model_jobs",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), nullable=False),
    sa.Column("runtime", sa.String(), nullable=False),
    sa.Column("kind", sa.String(), nullable=False),
    sa.Column("remote_id", sa.String(), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("remote_status", sa.String(), nullable=True),
    sa.Column("request", JSONType, nullable=False),
    sa.Column("result", JSONType, nullable=False),
    sa.Column("error", JSONType, nullable=True),
    sa.Column("created_by", sa.String(), nullable=True),
    sa.Column("revision", sa.Integer(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.Column("next_poll_at", UtcDateTime(), nullable=True),
    sa.Column("finished_at", UtcDateTime(), nullable=True),
    sa.Column("notified_at", UtcDateTime(), nullable=True),
    sa.Column("a2a_task_id", sa.String(), nullable=True),
    sa.Column("a2a_task_owner", sa.String(), nullable=True),
    sa.Index("ix_model_jobs_company_created", "company_id", "created_at"),
    sa.Index("ix_model_jobs_next_poll", "next_poll_at"),
)
