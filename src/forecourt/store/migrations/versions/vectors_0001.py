"""The vector store of embedding.create (``vector_records``).

Revision ID: vectors_0001
Revises: operator_0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "vectors_0001"
down_revision: str | None = "operator_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)
VECTOR = sa.LargeBinary().with_variant(postgresql.ARRAY(sa.REAL()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "vector_records",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=True),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("vector", VECTOR, nullable=False),
        sa.Column("text_sha256", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("source", JSON, nullable=False),
        sa.Column("created_by", sa.String(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"], name=op.f("fk_vector_records_company_id_companies")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vector_records")),
    )
    op.create_index(
        "ix_vector_records_company_model", "vector_records", ["company_id", "model", "dealership_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_vector_records_company_model", table_name="vector_records")
    op.drop_table("vector_records")
