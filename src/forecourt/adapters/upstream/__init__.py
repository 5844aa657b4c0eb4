"""Upstream MCP servers (``tool.run``): a company's own MCP servers, federated behind the gateway.

``register_upstreams(services)`` adds the ``admin.upstreams.*`` actions and the ``upstream`` adapter, creates
the :class:`~.hub.UpstreamHub` (which mirrors each upstream's tools into the catalogue) and registers its sync
loop as a background task and its shutdown as a closer. ``install_federation(surface, hub)`` connects the MCP
front door to it (upstream results passed through unchanged, resources, prompts, pass-through names, and what
an upstream asks during a call — sampling, elicitation, log messages — relayed to that call's caller only:
``relay.py``, ``mcp_relay.py``). See docs/mcp.md ("Federation", "Conformance").
"""

from __future__ import annotations

from typing import Any

from forecourt.actions.base import Catalogue
from forecourt.adapters.upstream.adapter import ADMIN_ACTIONS, PROGRESS, UpstreamAdapter
from forecourt.adapters.upstream.hub import Binding, UpstreamHub
from forecourt.adapters.upstream.pool import UpstreamProtocolError, UpstreamSession
from forecourt.adapters.upstream.spec import (
    ADAPTER_ID,
    InvalidUpstream,
    NamespaceTaken,
    UpstreamNotFound,
    UpstreamSpec,
    forward_action_name,
    tool_name,
)

__all__ = [
    "ADAPTER_ID",
    "ADMIN_ACTIONS",
    "PROGRESS",
    "Binding",
    "InvalidUpstream",
    "NamespaceTaken",
    "UpstreamAdapter",
    "UpstreamHub",
    "UpstreamNotFound",
    "UpstreamProtocolError",
    "UpstreamSession",
    "UpstreamSpec",
    "forward_action_name",
    "register_upstream_actions",
    "register_upstreams",
    "tool_name",
]


def register_upstream_actions(catalogue: Catalogue) -> None:
    """Add the ``admin.upstreams.*`` actions (the adapter comes with :func:`register_upstreams`)."""
    for action in ADMIN_ACTIONS:
        if catalogue.get(action.name) is None:
            catalogue.add(action)


def register_upstreams(services: Any) -> UpstreamHub:
    """Wire the upstream registry into ``services`` (a :class:`forecourt.bootstrap.Services`).

    Returns:
        The hub (also what the MCP surface federates).
    """
    gateway = services.gateway
    register_upstream_actions(services.catalogue)
    hub = UpstreamHub(
        store=services.store,
        catalogue=services.catalogue,
        settings=services.settings,
        credentials=gateway.credentials,
        operator_config=gateway.adapter_configs.defaults.get(ADAPTER_ID),
    )
    services.catalogue.add_adapter(UpstreamAdapter(hub))
    services.background.append(hub.run)
    services.closers.append(hub.close)
    return hub
