"""Tables of scheduled inventory feeds (with their replica lease) and of CRM lead inboxes reached by e-mail."""

from __future__ import annotations

import sqlalchemy as sa

from forecourt.store.sql.tables import JSONType, UtcDateTime, metadata

feed_sources = sa.Table(
    "feed_sources",
    metadata,
    sa.Column("dealership_id", sa.String(), sa.ForeignKey("dealerships.id"), primary_key=True),
    sa.Column("url", sa.String(), nullable=False),
    sa.Column("interval_s", sa.Integer(), nullable=False),
    sa.Column("full", sa.Boolean(), nullable=False),
    sa.Column("enabled", sa.Boolean(), nullable=False),
    sa.Column("next_run_at", UtcDateTime(), nullable=False),
    sa.Column("lease_owner", sa.String()),
    sa.Column("lease_until", UtcDateTime()),
    sa.Column("last_run_at", UtcDateTime()),
    sa.Column("last_status", sa.String()),
    sa.Column("last_report", JSONType),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.Index("ix_feed_sources_next_run_at", "next_run_at"),
)

crm_mail_routes = sa.Table(
    "crm_mail_routes",
    metadata,
    sa.Column("dealership_id", sa.String(), sa.ForeignKey("dealerships.id"), primary_key=True),
    sa.Column("config", JSONType, nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
)
