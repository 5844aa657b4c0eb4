"""Operator keys: the deployment's own credentials, above every company (they create companies)."""

from __future__ import annotations

import sqlalchemy as sa

from forecourt.store.sql.tables import UtcDateTime, metadata

operator_keys = sa.Table(
    "operator_keys",
    metadata,
    sa.Column("prefix", sa.String(), primary_key=True),
    sa.Column("key_hash", sa.String(), nullable=False),
    sa.Column("name", sa.String(), nullable=False, unique=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("revoked_at", UtcDateTime(), nullable=True),
)
