"""Upstream MCP servers (``tool.run``): a company's own MCP servers, federated behind the gateway.

``register_upstreams(store, catalogue, settings, gateway, tasks)`` adds the ``upstream`` adapter, creates the
:class:`~.hub.UpstreamHub` (which mirrors each upstream's tools into the catalogue) and registers its sync loop
as a background task and its shutdown as a closer. The MCP front door federates through the hub
(``surfaces/mcp/federation``: upstream results passed through unchanged, resources, prompts, pass-through names,
and what an upstream asks during a call — sampling, elicitation, log messages — relayed to that call's caller
only, :mod:`.relay`). See docs/mcp.md ("Federation", "Conformance").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forecourt.adapters.upstream.adapter import PROGRESS, UpstreamAdapter
    from forecourt.adapters.upstream.hub import Binding, UpstreamHub
    from forecourt.adapters.upstream.pool import UpstreamSession
    from forecourt.background import BackgroundTasks
    from forecourt.contract import Catalogue
    from forecourt.gateway.pipeline import Gateway
    from forecourt.settings import Settings
    from forecourt.store.base import Store

from forecourt.adapters.errors import UpstreamProtocolError
from forecourt.domain.errors import InvalidUpstream, NamespaceTaken, UpstreamNotFound
from forecourt.domain.upstreams import ADAPTER_ID, UpstreamSpec, forward_action_name, tool_name

_LAZY = {
    "PROGRESS": "adapter",
    "UpstreamAdapter": "adapter",
    "Binding": "hub",
    "UpstreamHub": "hub",
    "UpstreamSession": "pool",
}
"""Imported on first use: the catalogue imports this package for ``.spec`` alone, and the session pool imports the
MCP SDK (about a second of CPU), which a command that never reaches an upstream should not pay."""

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
    from forecourt.adapters.upstream.adapter import UpstreamAdapter
    from forecourt.adapters.upstream.hub import UpstreamHub

    hub = UpstreamHub(
        store=store,
        catalogue=catalogue,
        settings=settings,
        credentials=gateway.credentials,
        operator_config=gateway.adapter_configs.defaults.get(ADAPTER_ID),
    )
    from forecourt.adapters.upstream.pinning import change_counter

    hub.pinning.count = change_counter(gateway.metrics.registry)
    catalogue.add_adapter(UpstreamAdapter(hub))
    tasks.run(hub.run)
    tasks.on_close(hub.close)
    return hub


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
