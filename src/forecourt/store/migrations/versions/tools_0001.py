"""Members: the MCP role toolset and tool naming mode; API keys: a toolset of their own.

Revision ID: tools_0001
Revises: vectors_0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "tools_0001"
down_revision: str | None = "vectors_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("members") as batch:
        batch.add_column(sa.Column("toolset", sa.String()))
        batch.add_column(sa.Column("tool_names", sa.String()))
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("toolset", sa.String()))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("toolset")
    with op.batch_alter_table("members") as batch:
        batch.drop_column("tool_names")
        batch.drop_column("toolset")
