"""Upstream MCP servers federated behind the gateway.

Revision ID: upstream_0001
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "upstream_0001"
down_revision: str | None = "knowledge_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "upstream_servers",
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("definition", JSON, nullable=False),
        sa.Column("operator_managed", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["company_id"], ["companies.id"], name=op.f("fk_upstream_servers_company_id_companies")
        ),
        sa.PrimaryKeyConstraint("company_id", "id", name=op.f("pk_upstream_servers")),
    )


def downgrade() -> None:
    op.drop_table("upstream_servers")
