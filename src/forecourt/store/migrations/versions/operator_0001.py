"""Operator keys (the bootstrap credential and those made with ``forecourt operator create-key``).

Revision ID: operator_0001
Revises: model_jobs_0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "operator_0001"
down_revision: str | None = "model_jobs_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "operator_keys",
        sa.Column("prefix", sa.String(), nullable=False),
        sa.Column("key_hash", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("revoked_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("prefix", name=op.f("pk_operator_keys")),
        sa.UniqueConstraint("name", name=op.f("uq_operator_keys_name")),
    )


def downgrade() -> None:
    op.drop_table("operator_keys")
