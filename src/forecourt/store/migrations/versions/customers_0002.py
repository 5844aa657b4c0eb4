"""Customers carry a possible-duplicate flag for the dealer (the lead intake never merges people on a phone alone).

Revision ID: customers_0002
Revises: upstream_0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "customers_0002"
down_revision: str | None = "upstream_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("customers") as batch:
        batch.add_column(sa.Column("possible_duplicate_of", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("customers") as batch:
        batch.drop_column("possible_duplicate_of")
