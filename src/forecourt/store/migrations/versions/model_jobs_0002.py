"""A model job keeps the A2A task that started it, so that the job's end ends the task on any replica.

Revision ID: model_jobs_0002
Revises: approvals_0002
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "model_jobs_0002"
down_revision: str | None = "approvals_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("model_jobs") as batch:
        batch.add_column(sa.Column("a2a_task_id", sa.String(), nullable=True))
        batch.add_column(sa.Column("a2a_task_owner", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("model_jobs") as batch:
        batch.drop_column("a2a_task_owner")
        batch.drop_column("a2a_task_id")
