"""Model runtime jobs (NVIDIA fine-tuning, Vertex AI batch prediction).

Revision ID: model_jobs_0001
Revises: console_0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "model_jobs_0001"
down_revision: str | None = "console_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "model_jobs",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("runtime", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("remote_id", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("remote_status", sa.String(), nullable=True),
        sa.Column("request", JSON, nullable=False),
        sa.Column("result", JSON, nullable=False),
        sa.Column("error", JSON, nullable=True),
        sa.Column("created_by", sa.String(), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.Column("next_poll_at", TIMESTAMP, nullable=True),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.Column("notified_at", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_model_jobs_company_created", "model_jobs", ["company_id", "created_at"])
    op.create_index("ix_model_jobs_next_poll", "model_jobs", ["next_poll_at"])


def downgrade() -> None:
    op.drop_index("ix_model_jobs_next_poll", table_name="model_jobs")
    op.drop_index("ix_model_jobs_company_created", table_name="model_jobs")
    op.drop_table("model_jobs")
