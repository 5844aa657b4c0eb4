"""Approval records: calls waiting for a person's sign-off (policy ``require_approval``)."""

from __future__ import annotations

import sqlalchemy as sa

from forecourt.store.sql.tables import JSONType, UtcDateTime, metadata

approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("company_id", sa.String(), nullable=False),
    sa.Column("dealership_id", sa.String()),
    sa.Column("member_id", sa.String()),
    sa.Column("action", sa.String(), nullable=False),
    sa.Column("args_digest", sa.String(), nullable=False),
    sa.Column("args_redacted", JSONType, nullable=False),
    sa.Column("rule", sa.String(), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("surface", sa.String(), nullable=False),
    sa.Column("requested_at", UtcDateTime(), nullable=False),
    sa.Column("decided_at", UtcDateTime()),
    sa.Column("decided_by", sa.String()),
    sa.Column("comment", sa.String(), nullable=False),
    sa.Column("held", JSONType),
    sa.Column("result", JSONType),
    sa.Column("ran_at", UtcDateTime()),
    sa.Index("ix_approvals_company_status", "company_id", "status", "requested_at"),
    sa.Index("ix_approvals_lookup", "company_id", "member_id", "action", "args_digest"),
)
