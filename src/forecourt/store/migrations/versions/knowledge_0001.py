"""Knowledge documents, chunks, vectors, the embedding cache, and named queries.

Revision ID: knowledge_0001
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "knowledge_0001"
down_revision: str | None = "aap_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)
VECTOR = sa.LargeBinary().with_variant(postgresql.ARRAY(sa.REAL()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "knowledge_documents",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("title", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("content_sha256", sa.String(length=64), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("meta", JSON, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["dealership_id"], ["dealerships.id"], name=op.f("fk_knowledge_documents_dealership_id_dealerships")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_documents")),
        sa.UniqueConstraint("dealership_id", "source", name=op.f("uq_knowledge_documents_dealership_id_source")),
    )
    op.create_table(
        "knowledge_chunks",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("document_id", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("heading", sa.String(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("text_sha256", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["knowledge_documents.id"],
            name=op.f("fk_knowledge_chunks_document_id_knowledge_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_chunks")),
    )
    op.create_index(
        "ix_knowledge_chunks_dealer_document", "knowledge_chunks", ["dealership_id", "document_id"], unique=False
    )
    op.create_table(
        "knowledge_vectors",
        sa.Column("chunk_id", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("dealership_id", sa.String(), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("vector", VECTOR, nullable=False),
        sa.ForeignKeyConstraint(
            ["chunk_id"],
            ["knowledge_chunks.id"],
            name=op.f("fk_knowledge_vectors_chunk_id_knowledge_chunks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("chunk_id", "model", name=op.f("pk_knowledge_vectors")),
    )
    op.create_index("ix_knowledge_vectors_dealer_model", "knowledge_vectors", ["dealership_id", "model"], unique=False)
    op.create_table(
        "embedding_cache",
        sa.Column("scope", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("text_sha256", sa.String(length=64), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("vector", VECTOR, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("scope", "model", "text_sha256", name=op.f("pk_embedding_cache")),
    )
    op.create_index("ix_embedding_cache_created", "embedding_cache", ["created_at"], unique=False)
    op.create_table(
        "named_queries",
        sa.Column("company_id", sa.String(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("definition", JSON, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"], name=op.f("fk_named_queries_company_id_companies")),
        sa.PrimaryKeyConstraint("company_id", "id", name=op.f("pk_named_queries")),
    )


def downgrade() -> None:
    op.drop_table("named_queries")
    op.drop_index("ix_embedding_cache_created", table_name="embedding_cache")
    op.drop_table("embedding_cache")
    op.drop_index("ix_knowledge_vectors_dealer_model", table_name="knowledge_vectors")
    op.drop_table("knowledge_vectors")
    op.drop_index("ix_knowledge_chunks_dealer_document", table_name="knowledge_chunks")
    op.drop_table("knowledge_chunks")
    op.drop_table("knowledge_documents")
