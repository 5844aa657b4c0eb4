"""Policy approval rules and the approvals table (operator console).

Revision ID: console_0001
Revises: customers_0002
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "console_0001"
down_revision: str | None = "customers_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("policies") as batch:
        batch.add_column(sa.Column("require_approval", JSON, nullable=False, server_default="[]"))
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String()),
        sa.Column("member_id", sa.String()),
        sa.Column("action", sa.String(), nullable=False),
        sa.Column("args_digest", sa.String(), nullable=False),
        sa.Column("args_redacted", JSON, nullable=False),
        sa.Column("rule", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("surface", sa.String(), nullable=False),
        sa.Column("requested_at", TIMESTAMP, nullable=False),
        sa.Column("decided_at", TIMESTAMP),
        sa.Column("decided_by", sa.String()),
        sa.Column("comment", sa.String(), nullable=False),
    )
    op.create_index("ix_approvals_company_status", "approvals", ["company_id", "status", "requested_at"])
    op.create_index("ix_approvals_lookup", "approvals", ["company_id", "member_id", "action", "args_digest"])


def downgrade() -> None:
    op.drop_table("approvals")
    with op.batch_alter_table("policies") as batch:
        batch.drop_column("require_approval")
