"""The registry of upstream MCP servers: one row per server a company federates behind the gateway."""

from __future__ import annotations

import sqlalchemy as sa

from forecourt.store.sql.tables import JSONType, UtcDateTime, metadata

upstream_servers = sa.Table(
    "upstream_servers",
    metadata,
    sa.Column("company_id", sa.String(), sa.ForeignKey("companies.id"), primary_key=True),
    sa.Column("id", sa.String(), primary_key=True),
    sa.Column("definition", JSONType, nullable=False),
    sa.Column("operator_managed", sa.Boolean(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
)

upstream_tool_pins = sa.Table(
    "upstream_tool_pins",
    metadata,
    sa.Column("company_id", sa.String(), primary_key=True),
    sa.Column("upstream_id", sa.String(), primary_key=True),
    sa.Column("tool", sa.String(), primary_key=True),
    sa.Column("digest", sa.String()),
    sa.Column("definition", JSONType),
    sa.Column("proposed_digest", sa.String()),
    sa.Column("proposed", JSONType),
    sa.Column("changed_at", UtcDateTime(), nullable=False),
)
"""Pinned upstream tools: ``digest``/``definition`` the approved version (``NULL``: never approved), ``proposed*``
a change waiting for an administrator (``proposed_digest = 'removed'``: the upstream dropped the tool)."""
