"""Wiring the MCP surface into the HTTP app: routes, the session manager's lifetime, keep-alives.

``mcp_routes(services)`` returns the routes to mount and registers a ``services.background`` task that runs
the SDK's session manager for the app's lifetime:

- ``/mcp`` (exactly; ``/mcp/{action}`` stays the REST envelope): Streamable HTTP, both protocol eras;
- ``/.well-known/oauth-protected-resource/mcp`` (and ``/.well-known/oauth-protected-resource``): RFC 9728;
- ``/.well-known/automotive-mcp.json``: the AutomotiveMCP manifest (also the resource ``automotive://manifest``).

Any replica answers any request, in both eras: 2026-07-28 requests are self-contained, and legacy
(2025-11-25) sessions run on the SDK's stateless transport with self-verifying session ids and subscriptions
kept in Redis (:mod:`~forecourt.surfaces.mcp.sessions`); change notifications reach every replica through
the event bus. No sticky sessions are needed behind a load balancer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from mcp.server import _streamable_http_modern
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from forecourt.surfaces.mcp.http import PRM_PATH, Caller, McpHttpGuard, protected_resource_metadata
from forecourt.surfaces.mcp.manifest import scopes_of
from forecourt.surfaces.mcp.server import McpSurface
from forecourt.surfaces.mcp.sessions import LegacySessions, registry_for

if TYPE_CHECKING:
    from forecourt.bootstrap import Services

logger = logging.getLogger(__name__)
ISSUER_TTL_S = 60.0


def configure_keepalive(interval_s: float) -> None:
    """SSE keep-alive comments on every MCP stream, in both eras (the SDK keeps these process-wide)."""
    EventSourceResponse.DEFAULT_PING_INTERVAL = interval_s  # type: ignore[assignment]
    _streamable_http_modern._SSE_PING_INTERVAL = interval_s


class _Issuers:
    """Authorization servers for the protected-resource metadata: configured ones, else the companies' OIDC issuers."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._cached: tuple[float, list[str]] | None = None

    async def get(self) -> list[str]:
        configured = list(self.services.settings.mcp_authorization_servers)
        if configured:
            return configured
        now = time.monotonic()
        if self._cached is not None and self._cached[0] > now:
            return self._cached[1]
        async with self.services.store.read() as uow:
            companies = await uow.tenancy.list_companies()
        issuers = sorted({c.oidc_issuer for c in companies if c.oidc_issuer})
        self._cached = (now + ISSUER_TTL_S, issuers)
        return issuers


class _Followed:
    """The dealerships a legacy session's stream follows: those of the caller's company it may address."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def of(self, caller: Caller) -> list[str]:
        principal = caller.principal
        if principal is None or principal.company_id is None:
            return []
        async with self.services.store.read() as uow:
            dealerships = await uow.tenancy.list_dealerships(principal.company_id)
        ids = [d.id for d in dealerships]
        return [i for i in ids if i in principal.dealership_ids] if principal.dealership_ids else ids


def mcp_routes(services: Services) -> list[BaseRoute]:
    """The MCP routes; also registers the session manager as a background task of ``services``."""
    settings = services.settings
    surface = McpSurface(services.gateway, settings, dispatcher=services.events)
    from forecourt.adapters.upstream.mcp_federation import install_federation

    install_federation(surface, services.upstreams)  # upstream MCP servers (adapters/upstream)
    configure_keepalive(settings.mcp_sse_ping_s)
    manager = StreamableHTTPSessionManager(
        app=surface.server,
        # Host and Origin are checked by the guard (glob patterns from settings.allowed_hosts).
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=settings.max_body_bytes,
        # Legacy sessions must not live in one process (see forecourt.surfaces.mcp.sessions).
        stateless=True,
    )
    registry = registry_for(settings)
    surface.legacy_registry = registry
    legacy = LegacySessions(
        manager.handle_request,
        settings=settings,
        relay=surface.relay,
        registry=registry,
        dealerships=_Followed(services).of,
    )
    ready = asyncio.Event()
    guard = McpHttpGuard(
        legacy,
        gateway=services.gateway,
        settings=settings,
        scope_for=surface.scope_for,
        anonymous_tool=surface.anonymous_tool,
        ready=ready,
    )

    async def run_session_manager() -> None:
        async with manager.run():
            ready.set()
            try:
                await asyncio.Event().wait()
            finally:
                ready.clear()
                await surface.close()
                await registry.close()

    services.background.append(run_session_manager)
    issuers = _Issuers(services)

    async def resource_metadata(_: Request) -> Response:
        doc = protected_resource_metadata(settings, scopes_of(services.catalogue), await issuers.get())
        return JSONResponse(doc, headers={"Cache-Control": "public, max-age=3600", "Access-Control-Allow-Origin": "*"})

    async def manifest_document(_: Request) -> Response:
        return JSONResponse(surface.manifest(), headers={"Cache-Control": "public, max-age=300"})

    routes: list[BaseRoute] = [
        Route("/mcp", guard),
        Route(PRM_PATH, resource_metadata, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource", resource_metadata, methods=["GET"]),
        Route("/.well-known/automotive-mcp.json", manifest_document, methods=["GET"]),
    ]
    guard.surface = surface  # reachable from the route, for diagnostics and tests
    return routes
