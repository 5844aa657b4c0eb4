"""Policy protections and pinned upstream tools.

``policies.protections``: per-turn restrictions after untrusted output, budgets, upstream auto-accept.
``upstream_tool_pins``: each upstream tool's approved definition (and digest) and a change waiting for approval.

Revision ID: protect_0001
Revises: inventory_0002
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "protect_0001"
down_revision: str | None = "inventory_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("policies") as batch:
        batch.add_column(sa.Column("protections", JSON, nullable=False, server_default="{}"))
    op.create_table(
        "upstream_tool_pins",
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("upstream_id", sa.String(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("digest", sa.String()),
        sa.Column("definition", JSON),
        sa.Column("proposed_digest", sa.String()),
        sa.Column("proposed", JSON),
        sa.Column("changed_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("company_id", "upstream_id", "tool", name=op.f("pk_upstream_tool_pins")),
    )


def downgrade() -> None:
    op.drop_table("upstream_tool_pins")
    with op.batch_alter_table("policies") as batch:
        batch.drop_column("protections")
