"""Policies: the MCP role toolsets a company's members are offered.

Revision ID: tools_0002
Revises: feeds_0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "tools_0002"
down_revision: str | None = "feeds_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("policies") as batch:
        batch.add_column(sa.Column("toolsets", JSON, nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("policies") as batch:
        batch.drop_column("toolsets")
