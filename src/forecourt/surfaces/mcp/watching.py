"""Resource subscriptions of the MCP surface: ``resources/subscribe`` / ``unsubscribe`` (2025-11-25) and
``subscriptions/listen`` (2026-07-28).

Watching is reading: a URI may be watched only when its caller may read it, decided by the very read it stands
for (:meth:`Watching.authorize_watch`). Updates come from the dealership's change events through the
surface's :class:`~forecourt.surfaces.mcp.subscriptions.SubscriptionRelay`; a legacy HTTP session's
subscriptions live in the shared registry (any replica may hold its stream).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp import MCPError
from mcp.server import ServerRequestContext

from forecourt.errors import Unauthorized
from forecourt.gateway.base import Principal
from forecourt.surfaces.mcp import resources
from forecourt.surfaces.mcp.caller import Caller
from forecourt.surfaces.mcp.sdk import connection_of
from forecourt.surfaces.mcp.tools import protocol_error
from forecourt.surfaces.mcp.uris import ResourceUri, parse_uri

if TYPE_CHECKING:
    from forecourt.surfaces.mcp.server import McpSurface

MAX_WATCHED_URIS = 100


def require_principal(caller: Caller) -> Principal:
    if caller.principal is None:
        raise protocol_error(Unauthorized())
    return caller.principal


class Watching:
    """The subscription handlers of ``surface`` (see the module docstring)."""

    def __init__(self, surface: McpSurface) -> None:
        self.surface = surface

    async def authorize_watch(self, caller: Caller, uri: str) -> ResourceUri:
        """The parsed URI when ``caller`` may read (so watch) it; the read's own refusal otherwise."""
        parsed = parse_uri(uri)
        if parsed is None or parsed.kind not in ("item", "collection"):
            raise MCPError(
                types.INVALID_PARAMS,
                "Only resource and collection URIs can be subscribed.",
                {"code": "invalid_params", "details": {"uri": uri[:256]}},
            )
        require_principal(caller)
        # Watching is reading: the subscription is decided by the very read it stands for (the same action,
        # tenancy, policy, scopes and existence checks), so nothing can be watched that could not be read.
        action, payload = resources.read_request(parsed)
        if parsed.kind == "collection":
            payload["limit"] = 1
        await self.surface.invoke(caller, action, payload)
        return parsed

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/subscribe`` (2025-11-25): updates go out on the session's standalone stream."""
        uri = str(params.uri)
        if self.surface.federation is not None:
            federated = await self.surface.federation.subscribe(ctx, uri)
            if federated is not None:
                return federated
        caller = self.surface.caller(ctx)
        parsed = await self.authorize_watch(caller, uri)
        assert parsed.dealership_id is not None
        if caller.session_id is not None and self.surface.legacy_registry is not None:
            # An HTTP session: any replica may hold its stream, so the subscription goes where all can see it.
            await self.surface.legacy_registry.add(caller.session_id, uri)
            return types.EmptyResult()
        conn = connection_of(ctx)  # the per-session connection: its lifetime is the subscription's
        key = conn.session_id or f"conn-{id(conn)}"
        if key in self.surface.relay.sessions.get(uri, {}):
            return types.EmptyResult()
        await self.surface.relay.acquire(parsed.dealership_id)
        self.surface.relay.add_session(uri, key, ctx.session, parsed.dealership_id)
        if not conn.state.get("forecourt.subscriptions"):
            conn.state["forecourt.subscriptions"] = True
            conn.exit_stack.callback(self.surface.relay.drop_session, key)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/unsubscribe`` (2025-11-25)."""
        if self.surface.federation is not None:
            federated = await self.surface.federation.unsubscribe(ctx, str(params.uri))
            if federated is not None:
                return federated
        caller = self.surface.caller(ctx)
        if caller.session_id is not None and self.surface.legacy_registry is not None:
            await self.surface.legacy_registry.remove(caller.session_id, str(params.uri))
            return types.EmptyResult()
        conn = connection_of(ctx)
        dealership_id = self.surface.relay.remove_session(str(params.uri), conn.session_id or f"conn-{id(conn)}")
        if dealership_id is not None:
            self.surface.relay.release(dealership_id)
        return types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): authorize every URI, follow its dealership, then stream."""
        caller = self.surface.caller(ctx)
        uris = list(params.notifications.resource_subscriptions or [])
        if len(uris) > MAX_WATCHED_URIS:
            raise MCPError(types.INVALID_PARAMS, "Too many resource subscriptions.", {"code": "invalid_params"})
        dealerships: set[str] = set()
        for uri in uris:
            parsed = await self.authorize_watch(caller, str(uri))
            assert parsed.dealership_id is not None
            dealerships.add(parsed.dealership_id)
        acquired: list[str] = []
        try:
            for dealership_id in sorted(dealerships):
                await self.surface.relay.acquire(dealership_id)
                acquired.append(dealership_id)
            company = caller.principal.company_id if caller.principal is not None else None
            own = self.surface.tool_changes.listener_for(company) if company else None
            return await (own or self.surface.listener)(ctx, params)
        finally:
            for dealership_id in acquired:
                self.surface.relay.release(dealership_id)
