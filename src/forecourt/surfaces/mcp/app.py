"""Wiring the MCP surface into the HTTP app: routes, the session manager's lifetime, keep-alives.

``mcp_routes(gateway, settings, events=..., hub=..., tasks=...)`` returns the routes to mount and runs the SDK's
session manager as a background task for the app's lifetime:

- ``/mcp`` (exactly; ``/mcp/{action}`` stays the REST envelope): Streamable HTTP, both protocol eras;
- ``/.well-known/oauth-protected-resource/mcp`` (and ``/.well-known/oauth-protected-resource``): RFC 9728,
  naming only the authorization servers the operator configured (``FORECOURT_MCP_AUTHORIZATION_SERVERS``);
- ``/companies/{company_id}/mcp``: the same server as each company's own protected resource, with its own
  RFC 9728 document at ``/.well-known/oauth-protected-resource/companies/{company_id}/mcp`` naming only that
  company's identity provider, and challenges pointing there (a credential of another company is refused);
- ``/.well-known/automotive-mcp.json``: the AutomotiveMCP manifest (also the resource ``automotive://manifest``).

Any replica answers any request, in both eras: 2026-07-28 requests are self-contained, and legacy
(2025-11-25) sessions run on the SDK's stateless transport with self-verifying session ids and subscriptions
kept in Redis (:mod:`~forecourt.surfaces.mcp.sessions`); change notifications reach every replica through
the event bus. No sticky sessions are needed behind a load balancer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from forecourt import caching
from forecourt.surfaces.mcp.caller import Caller
from forecourt.surfaces.mcp.direct import DirectCalls
from forecourt.surfaces.mcp.http import (
    COMPANY_KEY,
    PRM_PATH,
    McpHttpGuard,
    SdkView,
    metadata_path,
    protected_resource_metadata,
)
from forecourt.surfaces.mcp.manifest import scopes_of
from forecourt.surfaces.mcp.server import McpSurface
from forecourt.surfaces.mcp.sessions import LegacySessions, registry_for

if TYPE_CHECKING:
    from forecourt.adapters.upstream.hub import UpstreamHub
    from forecourt.background import BackgroundTasks
    from forecourt.events import OutboxDispatcher
    from forecourt.gateway.pipeline import Gateway
    from forecourt.settings import Settings

logger = logging.getLogger(__name__)
ISSUER_TTL_S = 60.0


def configure_keepalive(interval_s: float) -> None:
    """SSE keep-alive comments on 2025-11-25 streams (sse-starlette's process-wide default).

    2026-07-28 streams keep the SDK's own 15 s keep-alive: the SDK offers no setting for it, and Forecourt does
    not patch the SDK's private module state.
    """
    EventSourceResponse.DEFAULT_PING_INTERVAL = interval_s  # type: ignore[assignment]


class _Issuers:
    """Authorization servers per protected resource: the operator's for ``/mcp``, a company's own for its resource.

    A company's identity provider is never named on the shared resource (nor on another company's): it would
    send any tenant's MCP host to that company to sign in, and disclose every tenant's provider.
    """

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        self.gateway = gateway
        self.settings = settings
        self._cached: caching.Cache[str, tuple[list[str] | None]] = caching.lru(
            "surfaces.mcp.company_issuers", 4096, max_age_s=ISSUER_TTL_S
        )

    def shared(self) -> list[str]:
        return list(self.settings.mcp_authorization_servers)

    async def of_company(self, company_id: str) -> list[str] | None:
        """The company's issuers (``None`` when there is no such company)."""
        hit = self._cached.get(company_id)  # (issuers,): a company that does not exist is remembered too
        if hit is not None:
            return hit[0]
        issuers = await self.gateway.tenancy.company_issuers(company_id)
        self._cached.put(company_id, (issuers,))
        return issuers


class _CompanyResource:
    """``/companies/{company_id}/mcp``: the MCP endpoint as one company's own protected resource."""

    def __init__(self, guard: McpHttpGuard, issuers: _Issuers) -> None:
        self.guard = guard
        self.issuers = issuers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        company_id = str(scope.get("path_params", {}).get("company_id", ""))
        if await self.issuers.of_company(company_id) is None:
            await JSONResponse({"error": {"code": "not_found", "message": "No such MCP server."}}, 404)(
                scope, receive, send
            )
            return
        await self.guard({**scope, COMPANY_KEY: company_id}, receive, send)


class _Followed:
    """The dealerships a legacy session's stream follows: those of the caller's company it may address."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def of(self, caller: Caller) -> list[str]:
        principal = caller.principal
        if principal is None or principal.company_id is None:
            return []
        ids = await self.gateway.tenancy.dealership_ids(principal.company_id)
        return [i for i in ids if i in principal.dealership_ids] if principal.dealership_ids else ids


def mcp_routes(
    gateway: Gateway,
    settings: Settings,
    *,
    events: OutboxDispatcher | None,
    hub: UpstreamHub | None,
    tasks: BackgroundTasks,
    expose: Callable[[McpSurface], None] | None = None,
) -> list[BaseRoute]:
    """The MCP routes; also runs the SDK's session manager as a background task for the app's lifetime.

    ``expose`` is given the surface (the console's Tools page shows each member its real ``tools/list``).
    """
    surface = McpSurface(gateway, settings, dispatcher=events, hub=hub)
    if expose is not None:
        expose(surface)
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
    direct = DirectCalls(SdkView(manager.handle_request), surface, max_body_bytes=settings.max_body_bytes)
    legacy = LegacySessions(
        direct,
        settings=settings,
        relay=surface.relay,
        registry=registry,
        dealerships=_Followed(gateway).of,
        tool_changes=surface.tool_changes,
    )
    ready = asyncio.Event()
    guard = McpHttpGuard(
        legacy,
        gateway=gateway,
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

    tasks.run(run_session_manager)
    issuers = _Issuers(gateway, settings)

    metadata_headers = {"Cache-Control": "public, max-age=3600", "Access-Control-Allow-Origin": "*"}

    async def resource_metadata(_: Request) -> Response:
        doc = protected_resource_metadata(settings, scopes_of(gateway.catalogue), issuers.shared())
        return JSONResponse(doc, headers=metadata_headers)

    async def company_metadata(request: Request) -> Response:
        company_id = request.path_params["company_id"]
        own = await issuers.of_company(company_id)
        if own is None:
            return JSONResponse({"error": {"code": "not_found", "message": "No such MCP server."}}, 404)
        doc = protected_resource_metadata(settings, scopes_of(gateway.catalogue), own, company_id)
        return JSONResponse(doc, headers=metadata_headers)

    async def manifest_document(_: Request) -> Response:
        return JSONResponse(surface.manifest(), headers={"Cache-Control": "public, max-age=300"})

    routes: list[BaseRoute] = [
        Route("/mcp", guard),
        Route(PRM_PATH, resource_metadata, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource", resource_metadata, methods=["GET"]),
        Route("/companies/{company_id}/mcp", _CompanyResource(guard, issuers)),
        Route(metadata_path("{company_id}"), company_metadata, methods=["GET"]),
        Route("/.well-known/automotive-mcp.json", manifest_document, methods=["GET"]),
    ]
    guard.surface = surface  # reachable from the route, for diagnostics and tests
    guard.direct = direct
    return routes
