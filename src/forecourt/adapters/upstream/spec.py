"""Upstream definitions and tool naming; they live in :mod:`forecourt.domain.upstreams` (re-exported here)."""

from __future__ import annotations

from forecourt.domain.upstreams import (
    ADAPTER_ID,
    MAX_TOOL_NAME,
    RESERVED_NAMESPACES,
    SLUG,
    TOOL_NAME,
    InvalidUpstream,
    NamespaceTaken,
    Registered,
    UpstreamNotFound,
    UpstreamSpec,
    forward_action_name,
    parse_spec,
    require_operator_for,
    tool_name,
)

__all__ = [
    "ADAPTER_ID",
    "MAX_TOOL_NAME",
    "RESERVED_NAMESPACES",
    "SLUG",
    "TOOL_NAME",
    "InvalidUpstream",
    "NamespaceTaken",
    "Registered",
    "UpstreamNotFound",
    "UpstreamSpec",
    "forward_action_name",
    "parse_spec",
    "require_operator_for",
    "tool_name",
]
