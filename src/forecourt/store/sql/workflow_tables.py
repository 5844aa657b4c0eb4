"""Tables of the BPMN workflow runner: definitions per company, runs, and rotation counters.

A run row holds the whole serialized SpiffWorkflow state plus its status, execution log and artifacts.
``revision`` is an optimistic-concurrency counter: every write says which revision it read, so two
replicas can never both advance one run. ``lease_owner``/``lease_expires_at`` name the replica that is
advancing a ``running`` run, so another replica resumes it only after that replica is gone.
"""

from __future__ import annotations

import sqlalchemy as sa

from forecourt.store.sql.tables import JSONType, UtcDateTime, metadata

workflow_definitions = sa.Table(
    "workflow_definitions",
    metadata,
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), primary_key=True),
    sa.Column("workflow_id", sa.String(), primary_key=True),
    sa.Column("version", sa.Integer(), primary_key=True),
    sa.Column("process_id", sa.String(), nullable=False),
    sa.Column("name", sa.String(), nullable=False),
    sa.Column("digest", sa.String(), nullable=False),
    sa.Column("bpmn", sa.Text(), nullable=False),
    sa.Column("created_by", sa.String(), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
)

workflow_runs = sa.Table(
    "workflow_runs",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), nullable=False),
    sa.Column("dealership_id", sa.String(), sa.ForeignKey("dealerships.id"), nullable=False),
    sa.Column("workflow_id", sa.String(), nullable=False),
    sa.Column("version", sa.Integer(), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("revision", sa.Integer(), nullable=False),
    sa.Column("state", sa.Text(), nullable=False),
    sa.Column("log", JSONType, nullable=False),
    sa.Column("artifacts", JSONType, nullable=False),
    sa.Column("error", JSONType, nullable=True),
    sa.Column("started_by", sa.String(), nullable=True),
    sa.Column("lease_owner", sa.String(), nullable=True),
    sa.Column("lease_expires_at", UtcDateTime(), nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.Index("ix_workflow_runs_dealer_created", "dealership_id", "created_at"),
    sa.Index("ix_workflow_runs_status", "status"),
)

workflow_rotations = sa.Table(
    "workflow_rotations",
    metadata,
    sa.Column("dealership_id", sa.String(), sa.ForeignKey("dealerships.id"), primary_key=True),
    sa.Column("pool", sa.String(), primary_key=True),
    sa.Column("counter", sa.BigInteger(), nullable=False),
)
