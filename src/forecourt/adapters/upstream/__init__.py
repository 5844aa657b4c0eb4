"""Upstream MCP servers (``tool.run``): a company's own MCP servers, federated behind the gateway.

``register_upstreams(store, catalogue, settings, gateway, tasks)`` adds the ``upstream`` adapter, creates the
:class:`~.hub.UpstreamHub` (which mirrors each upstream's tools into the catalogue) and registers its sync loop
as a background task and its shutdown as a closer. The MCP front door federates through the hub
(``surfaces/mcp/federation``: upstream results passed through unchanged, resources, prompts, pass-through names,
and what an upstream asks during a call — sampling, elicitation, log messages — relayed to that call's caller
only, :mod:`.relay`). See docs/mcp.md ("Federation", "Conformance").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forecourt.background import BackgroundTasks
    from forecourt.contract import Catalogue
    from forecourt.gateway.pipeline import Gateway
    from forecourt.settings import Settings
    from forecourt.store.base import Store

from forecourt.adapters.errors import UpstreamProtocolError
from forecourt.adapters.upstream.adapter import PROGRESS, UpstreamAdapter
from forecourt.adapters.upstream.hub import Binding, UpstreamHub
from forecourt.adapters.upstream.pool import UpstreamSession
from forecourt.domain.errors import InvalidUpstream, NamespaceTaken, UpstreamNotFound
from forecourt.domain.upstreams import ADAPTER_ID, UpstreamSpec, forward_action_name, tool_name

__all__ = [
    "ADAPTER_ID",
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
    "register_upstreams",
    "tool_name",
]


def register_upstreams(
    store: Store, catalogue: Catalogue, settings: Settings, gateway: Gateway, tasks: BackgroundTasks
) -> UpstreamHub:
    """Create the hub that mirrors upstream tools into ``catalogue``, with the ``upstream`` adapter that runs them.

    Returns:
        The hub (also what the MCP surface federates).
    """
    hub = UpstreamHub(
        store=store,
        catalogue=catalogue,
        settings=settings,
        credentials=gateway.credentials,
        operator_config=gateway.adapter_configs.defaults.get(ADAPTER_ID),
    )
    catalogue.add_adapter(UpstreamAdapter(hub))
    tasks.run(hub.run)
    tasks.on_close(hub.close)
    return hub
