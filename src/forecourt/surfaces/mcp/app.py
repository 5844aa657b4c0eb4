"""Wiring the MCP surface into the HTTP app: routes, the session manager's lifetime, keep-alives.

``mcp_routes(services)`` returns the routes to mount and registers a ``services.background`` task that runs
the SDK's session manager for the app's lifetime:

- ``/mcp`` (exactly; ``/mcp/{action}`` stays the REST envelope): Streamable HTTP, both protocol eras;
- ``/.well-known/oauth-protected-resource/mcp`` (and ``/.well-known/oauth-protected-resource``): RFC 9728;
- ``/.well-known/automotive-mcp.json``: the AutomotiveMCP manifest (also the resource ``automotive://manifest``).

Legacy (2025-11-25) sessions live in this process's memory: behind a load balancer, route on the
``Mcp-Session-Id`` header (sticky sessions). 2026-07-28 requests are self-contained and any replica answers
them; change notifications reach every replica through the event bus.
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

from forecourt.surfaces.mcp.http import PRM_PATH, McpHttpGuard, protected_resource_metadata
from forecourt.surfaces.mcp.manifest import scopes_of
from forecourt.surfaces.mcp.server import McpSurface

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
        async with self.services.store.transaction() as uow:
            companies = await uow.tenancy.list_companies()
        issuers = sorted({c.oidc_issuer for c in companies if c.oidc_issuer})
        self._cached = (now + ISSUER_TTL_S, issuers)
        return issuers


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
        session_idle_timeout=settings.mcp_session_idle_s,
        max_sessions=settings.mcp_max_sessions,
    )
    ready = asyncio.Event()
    guard = McpHttpGuard(
        manager.handle_request,
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
