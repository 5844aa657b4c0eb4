"""``admin.upstreams.*``: a company's upstream MCP servers (run by the ``upstream`` adapter,
:class:`~forecourt.adapters.upstream.UpstreamAdapter`; their federated tools join the catalogue at run time)."""

from __future__ import annotations

from typing import Any

from forecourt.actions.base import Action, Catalogue
from forecourt.actions.common import admin_action
from forecourt.adapters.upstream.spec import ADAPTER_ID, SLUG


def _admin(name: str, description: str, props: dict[str, Any], required: list[str], *, write: bool) -> Action:
    return admin_action(name, description, props, required, write=write, adapter=ADAPTER_ID, tags=("upstream",))


ADMIN_ACTIONS: tuple[Action, ...] = (
    _admin("admin.upstreams.list", "List the company's upstream MCP servers and their state.", {}, [], write=False),
    _admin(
        "admin.upstreams.upsert",
        "Register or replace an upstream MCP server (Streamable HTTP url, or stdio command for the operator).",
        {"upstream": {"type": "object"}},
        ["upstream"],
        write=True,
    ),
    _admin(
        "admin.upstreams.set_enabled",
        "Enable or disable an upstream MCP server, keeping the rest of its stored definition (credentials included).",
        {"upstream_id": {"type": "string", "pattern": SLUG.pattern}, "enabled": {"type": "boolean"}},
        ["upstream_id", "enabled"],
        write=True,
    ),
    _admin(
        "admin.upstreams.tool_changes",
        "List the changed tools of an upstream MCP server that wait for approval, each with its diff.",
        {"upstream_id": {"type": "string", "pattern": SLUG.pattern}},
        ["upstream_id"],
        write=False,
    ),
    _admin(
        "admin.upstreams.approve_tools",
        "Approve changed tools of an upstream MCP server (all pending, or those named); they are offered again.",
        {
            "upstream_id": {"type": "string", "pattern": SLUG.pattern},
            "tools": {"type": "array", "items": {"type": "string", "maxLength": 256}, "maxItems": 500},
        },
        ["upstream_id"],
        write=True,
    ),
    _admin(
        "admin.upstreams.delete",
        "Remove an upstream MCP server; its tools disappear.",
        {"upstream_id": {"type": "string", "pattern": SLUG.pattern}},
        ["upstream_id"],
        write=True,
    ),
)


def register_upstream_actions(catalogue: Catalogue) -> None:
    """Add the ``admin.upstreams.*`` actions (the adapter comes with the hub, in bootstrap)."""
    for action in ADMIN_ACTIONS:
        if catalogue.get(action.name) is None:
            catalogue.add(action)
