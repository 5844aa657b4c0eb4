"""Indexes that hand a dealership's vehicles over in the common sorts' order, so that a page reads its own rows.

Each is ``(dealership_id, <sort column>, id, status)``: the sort column then the tie-breaker in the order the
search sorts by (``store/sql/search.order_by``: id in the sort's direction, so one index serves both
directions), then the status the default "offerable only" filter checks on the index entry itself. The 20
cheapest (or newest, or lowest-mileage) of a 2,000-vehicle rooftop are then the first ~22 entries of one
index range instead of every offerable vehicle read and sorted in a temporary B-tree; a keyset continuation
page (``(price_minor, id) > (?, ?)``) starts inside the same range. ``(dealership_id, make_l, price_minor, id,
status)`` does the same for the commonest filter, a make, sorted by price.

An SQLite database that has planner statistics (``sqlite_stat1``) gets them for the new indexes too (see
``inventory_0001``: an index without statistics beside indexes with them misleads the planner).

Revision ID: inventory_0002
Revises: inventory_0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "inventory_0002"
down_revision: str | None = "inventory_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES: dict[str, list[str]] = {
    "ix_vehicles_dealer_price_id": ["dealership_id", "price_minor", "id", "status"],
    "ix_vehicles_dealer_year_id": ["dealership_id", "year", "id", "status"],
    "ix_vehicles_dealer_mileage_id": ["dealership_id", "mileage_value", "id", "status"],
    "ix_vehicles_dealer_make_price_id": ["dealership_id", "make_l", "price_minor", "id", "status"],
}


def upgrade() -> None:
    for name, columns in INDEXES.items():
        op.create_index(name, "vehicles", columns, unique=False)
    bind = op.get_bind()
    if (
        bind.dialect.name == "sqlite"
        and bind.execute(sa.text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")).first()
    ):
        for name in INDEXES:
            op.execute(f"ANALYZE {name}")


def downgrade() -> None:
    for name in reversed(INDEXES):
        op.drop_index(name, table_name="vehicles")
