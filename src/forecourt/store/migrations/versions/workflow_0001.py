"""BPMN workflow runner: definitions, runs, rotation counters.

Revision ID: workflow_0001
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "workflow_0001"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "workflow_definitions",
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("workflow_id", sa.String(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("process_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("digest", sa.String(), nullable=False),
        sa.Column("bpmn", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["company_id"], ["companies.id"], name=op.f("fk_workflow_definitions_company_id_companies")
        ),
        sa.PrimaryKeyConstraint("company_id", "workflow_id", "version", name=op.f("pk_workflow_definitions")),
    )
    op.create_table(
        "workflow_runs",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("workflow_id", sa.String(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("log", JSON, nullable=False),
        sa.Column("artifacts", JSON, nullable=False),
        sa.Column("error", JSON, nullable=True),
        sa.Column("started_by", sa.String(), nullable=True),
        sa.Column("lease_owner", sa.String(), nullable=True),
        sa.Column("lease_expires_at", TIMESTAMP, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"], name=op.f("fk_workflow_runs_company_id_companies")),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_workflow_runs_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_runs")),
    )
    op.create_index("ix_workflow_runs_dealer_created", "workflow_runs", ["dealership_id", "created_at"])
    op.create_index("ix_workflow_runs_status", "workflow_runs", ["status"])
    op.create_table(
        "workflow_rotations",
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("pool", sa.String(), nullable=False),
        sa.Column("counter", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_workflow_rotations_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("dealership_id", "pool", name=op.f("pk_workflow_rotations")),
    )


def downgrade() -> None:
    op.drop_table("workflow_rotations")
    op.drop_index("ix_workflow_runs_status", table_name="workflow_runs")
    op.drop_index("ix_workflow_runs_dealer_created", table_name="workflow_runs")
    op.drop_table("workflow_runs")
    op.drop_table("workflow_definitions")
