"""Tables of the knowledge adapter (dealer documents, chunks, vectors, embedding cache) and of named queries.

Vectors are float32: a little-endian BLOB on SQLite (the layout ``sqlite-vec`` reads directly) and a
``real[]`` on PostgreSQL (which pgvector casts to ``vector`` when that extension is installed). The
full-text indexes are derived data and are not tables here: SQLite keeps an FTS5 virtual table that
the knowledge repository creates and backfills on first use, PostgreSQL ranks ``to_tsvector`` at query
time over the dealership's chunks.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from forecourt.store.sa_postgresql import postgresql
from forecourt.store.sql.tables import JSONType, UtcDateTime, metadata

VectorType: sa.types.TypeEngine[Any] = sa.LargeBinary().with_variant(postgresql.ARRAY(sa.REAL()), "postgresql")

knowledge_documents = sa.Table(
    "knowledge_documents",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("dealership_id", sa.String(), sa.ForeignKey("dealerships.id"), nullable=False),
    sa.Column("source", sa.String(), nullable=False),
    sa.Column("title", sa.String(), nullable=False),
    sa.Column("kind", sa.String(), nullable=False),
    sa.Column("content_sha256", sa.String(64), nullable=False),
    sa.Column("chunk_count", sa.Integer(), nullable=False),
    sa.Column("meta", JSONType, nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.UniqueConstraint("dealership_id", "source"),
)

knowledge_chunks = sa.Table(
    "knowledge_chunks",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("document_id", sa.String(), sa.ForeignKey("knowledge_documents.id", ondelete="CASCADE"), nullable=False),
    sa.Column("dealership_id", sa.String(), nullable=False),
    sa.Column("ordinal", sa.Integer(), nullable=False),
    sa.Column("heading", sa.String(), nullable=False),
    sa.Column("text", sa.Text(), nullable=False),
    sa.Column("text_sha256", sa.String(64), nullable=False),
    sa.Index("ix_knowledge_chunks_dealer_document", "dealership_id", "document_id"),
)

knowledge_vectors = sa.Table(
    "knowledge_vectors",
    metadata,
    sa.Column("chunk_id", sa.String(), sa.ForeignKey("knowledge_chunks.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("model", sa.String(), primary_key=True),
    sa.Column("dealership_id", sa.String(), nullable=False),
    sa.Column("dimensions", sa.Integer(), nullable=False),
    sa.Column("vector", VectorType, nullable=False),
    sa.Index("ix_knowledge_vectors_dealer_model", "dealership_id", "model"),
)

# Vectors of texts embedded through ``embedding.create`` or ingestion, by owner, model and text digest.
# The text itself is never stored.
embedding_cache = sa.Table(
    "embedding_cache",
    metadata,
    sa.Column("scope", sa.String(), primary_key=True),
    sa.Column("model", sa.String(), primary_key=True),
    sa.Column("text_sha256", sa.String(64), primary_key=True),
    sa.Column("dimensions", sa.Integer(), nullable=False),
    sa.Column("tokens", sa.Integer(), nullable=False),
    sa.Column("vector", VectorType, nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Index("ix_embedding_cache_created", "created_at"),
)

named_queries = sa.Table(
    "named_queries",
    metadata,
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), primary_key=True),
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("description", sa.Text(), nullable=False),
    sa.Column("definition", JSONType, nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
)
