"""The vector store of ``embedding.create``: stored vectors with their company, dealership and source metadata.

Vectors are float32, as in :mod:`forecourt.store.sql.knowledge_tables`: a little-endian BLOB on SQLite (ranked
in SQL by sqlite-vec) and a ``real[]`` on PostgreSQL (ranked by pgvector when the extension is installed in the
database, else by an exact scan of the company's vectors). The text is stored only when the caller asks
(``keep_text``); otherwise only its SHA-256.
"""

from __future__ import annotations

import sqlalchemy as sa

from forecourt.store.sql.knowledge_tables import VectorType
from forecourt.store.sql.tables import JSONType, UtcDateTime, metadata

vector_records = sa.Table(
    "vector_records",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), nullable=False),
    sa.Column("dealership_id", sa.String(), nullable=True),
    sa.Column("model", sa.String(), nullable=False),
    sa.Column("dimensions", sa.Integer(), nullable=False),
    sa.Column("vector", VectorType, nullable=False),
    sa.Column("text_sha256", sa.String(64), nullable=False),
    sa.Column("text", sa.Text(), nullable=True),
    sa.Column("tokens", sa.Integer(), nullable=False),
    sa.Column("source", JSONType, nullable=False),
    sa.Column("created_by", sa.String(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Index("ix_vector_records_company_model", "company_id", "model", "dealership_id"),
)
