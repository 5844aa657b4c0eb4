"""Held calls run on approval: an approval keeps the held call until it runs, then the call's result.

Revision ID: approvals_0002
Revises: tools_0002
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "approvals_0002"
down_revision: str | None = "tools_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("held", JSON, nullable=True))
        batch.add_column(sa.Column("result", JSON, nullable=True))
        batch.add_column(sa.Column("ran_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("ran_at")
        batch.drop_column("result")
        batch.drop_column("held")
