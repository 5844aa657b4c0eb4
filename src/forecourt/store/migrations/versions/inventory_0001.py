"""A dealership's vehicles in id order with their status: the default search (no sort, offerable vehicles) reads
its page from this index alone and stops after the page, instead of sorting every offerable vehicle by id.

An SQLite database that has planner statistics (``sqlite_stat1``, from an operator's ``ANALYZE``) gets them for
the new index too: beside the other indexes' statistics, an index without any looked cheaper than it is, and
the planner took it for filtered searches sorted by price (1M vehicles: p50 0.89 -> 1.38 ms until analysed).

Revision ID: inventory_0001
Revises: model_jobs_0002
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "inventory_0001"
down_revision: str | None = "model_jobs_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_vehicles_dealer_id_status", "vehicles", ["dealership_id", "id", "status"], unique=False)
    bind = op.get_bind()
    if (
        bind.dialect.name == "sqlite"
        and bind.execute(sa.text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")).first()
    ):
        op.execute("ANALYZE ix_vehicles_dealer_id_status")


def downgrade() -> None:
    op.drop_index("ix_vehicles_dealer_id_status", table_name="vehicles")
