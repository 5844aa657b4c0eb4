"""AAP dealer agent: push subscriptions per lead/appointment and outbox cursors.

Revision ID: aap_0001
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "aap_0001"
down_revision: str | None = "workflow_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "aap_subscriptions",
        sa.Column("subject_id", sa.String(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("subject_id", "task_id"),
    )
    op.create_table(
        "aap_cursors",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("aap_cursors")
    op.drop_table("aap_subscriptions")
