"""The AutomotiveMCP server manifest, computed from what actually runs.

``{automotive_mcp: {spec_version, server{name, vendor, version, url}, domains{<d>: {level}}, auth{type, scopes}}}``.

A domain is listed only with the highest level whose every part works here:

- Level 1 (core read): the domain has a readable resource collection (its get and list actions exist);
- Level 2 (tools): Level 1, and the domain's operations are MCP tools (at least one action of the domain);
- Level 3 (eventing): Level 2, and change events flow for every resource type of the domain (the outbox
  dispatcher runs and every such type is written to the outbox), so subscriptions and ``events.list`` work.

Domains with nothing readable (e.g. ``deals``, whose only operation is the ``deals.request_trade_value`` tool)
are not claimed, although their tools are listed.
"""

from __future__ import annotations

from typing import Any

from forecourt.contract import Catalogue
from forecourt.domain.events import ResourceType
from forecourt.settings import Settings
from forecourt.surfaces.mcp.handshake import server_version
from forecourt.surfaces.mcp.tools import exposed
from forecourt.surfaces.mcp.uris import COLLECTIONS

SPEC_VERSION = "0.1"
SPEC_DOMAINS = ("inventory", "leads", "deals", "service", "parts", "fni", "signals", "consent")
EVENTED_TYPES = frozenset(ResourceType)


def domain_levels(catalogue: Catalogue, *, eventing: bool) -> dict[str, int]:
    """The level each domain truthfully reaches (domains below Level 1 are left out)."""
    levels: dict[str, int] = {}
    for domain in SPEC_DOMAINS:
        readable = [
            c
            for c in COLLECTIONS
            if c.domain == domain and catalogue.get(c.get_action) is not None and catalogue.get(c.list_action)
        ]
        if not readable:
            continue
        level = 1
        if any(a.domain == domain and exposed(a) for a in catalogue.all()):
            level = 2
        if level == 2 and eventing and all(c.resource_type in EVENTED_TYPES for c in readable):
            level = 3
        levels[domain] = level
    return levels


def scopes_of(catalogue: Catalogue) -> list[str]:
    """Every scope an exposed action needs, plus the write scope of each domain that has a read one."""
    scopes = {a.scope for a in catalogue.all() if exposed(a) and a.scope}
    return sorted(scopes)


def manifest(catalogue: Catalogue, settings: Settings, *, eventing: bool) -> dict[str, Any]:
    """The manifest document."""
    base = settings.advertised_url
    return {
        "automotive_mcp": {
            "spec_version": SPEC_VERSION,
            "server": {"name": "Forecourt", "vendor": "Forecourt", "version": server_version(), "url": f"{base}/mcp"},
            "domains": {d: {"level": lvl} for d, lvl in domain_levels(catalogue, eventing=eventing).items()},
            "auth": {"type": "oauth2", "scopes": scopes_of(catalogue)},
        }
    }
