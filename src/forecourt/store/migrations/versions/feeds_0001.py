"""Scheduled inventory feeds (with a replica lease) and CRM lead inboxes reached by e-mail.

Revision ID: feeds_0001
Revises: tools_0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "feeds_0001"
down_revision: str | None = "tools_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "feed_sources",
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("url", sa.String(), nullable=False),
        sa.Column("interval_s", sa.Integer(), nullable=False),
        sa.Column("full", sa.Boolean(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("next_run_at", TIMESTAMP, nullable=False),
        sa.Column("lease_owner", sa.String(), nullable=True),
        sa.Column("lease_until", TIMESTAMP, nullable=True),
        sa.Column("last_run_at", TIMESTAMP, nullable=True),
        sa.Column("last_status", sa.String(), nullable=True),
        sa.Column("last_report", JSON, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_feed_sources_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("dealership_id", name=op.f("pk_feed_sources")),
    )
    op.create_index("ix_feed_sources_next_run_at", "feed_sources", ["next_run_at"])
    op.create_table(
        "crm_mail_routes",
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("config", JSON, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_crm_mail_routes_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("dealership_id", name=op.f("pk_crm_mail_routes")),
    )


def downgrade() -> None:
    op.drop_table("crm_mail_routes")
    op.drop_index("ix_feed_sources_next_run_at", table_name="feed_sources")
    op.drop_table("feed_sources")
