"""Forecourt's AutomotiveMCP server: a low-level ``mcp.server.Server`` whose handlers all go through the gateway.

One :class:`McpSurface` serves Streamable HTTP at ``/mcp`` (the 2025-11-25 handshake era with sessions and
the 2026-07-28 stateless era, on one endpoint) and ``forecourt mcp --stdio``. Tools come from the action
catalogue, resources from :mod:`~forecourt.surfaces.mcp.uris`, prompts from
:mod:`~forecourt.surfaces.mcp.prompts`; every tool call and resource read is a ``Gateway.invoke``.

Errors: failures of a tool call are tool results with ``isError: true`` and the AutomotiveMCP error body;
protocol faults (unknown tool, malformed params, unknown resource, a refused resource read or subscription)
are JSON-RPC errors whose ``data`` carries the same body. Any other exception is logged and answered
``-32603 Internal error.`` — never its text (the SDK would otherwise put it on the legacy wire).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.subscriptions import ListenHandler
from mcp.shared.inbound import X_MCP_HEADER_KEY as X_MCP_HEADER
from pydantic import ValidationError

from forecourt.actions.base import Action
from forecourt.errors import Expired, ForecourtError, InvalidParams, TenancyDenied, Unauthorized
from forecourt.events import OutboxDispatcher
from forecourt.gateway.base import Invocation, Outcome, Principal
from forecourt.gateway.pipeline import Gateway
from forecourt.gateway.policy import decide
from forecourt.settings import Settings
from forecourt.surfaces.mcp import prompts, resources
from forecourt.surfaces.mcp.http import CALLER_KEY, Caller
from forecourt.surfaces.mcp.manifest import manifest
from forecourt.surfaces.mcp.sessions import SubscriptionRegistry
from forecourt.surfaces.mcp.subscriptions import SubscriptionRelay
from forecourt.surfaces.mcp.tools import (
    ToolSet,
    addressed_separately,
    dumps,
    error_result,
    exposed,
    success_result,
)
from forecourt.surfaces.mcp.uris import ResourceUri, parse_uri

logger = logging.getLogger(__name__)

TOOLS_PAGE = 100
MAX_WATCHED_URIS = 100
INSTRUCTIONS = (
    "Forecourt puts a car dealership's systems behind AutomotiveMCP. Every call is scoped to one dealership "
    "(`dealership_id`, optional when your credential covers exactly one). Lists return {items, next_cursor, "
    "total}: pass next_cursor back for more. Money is integer minor units with an ISO 4217 currency, mileage "
    "has a unit, times are RFC 3339 with an offset. Errors are {error: {code, message, details, retryable}}. "
    "Resources use automotive://dealers/{dealership_id}/{vehicles|leads|customers|repair_orders|appointments|"
    "consents}[/{id}]; subscribe to a collection to hear about changes, or replay them with events.list."
)


def protocol_error(exc: ForecourtError) -> MCPError:
    """A JSON-RPC error carrying the AutomotiveMCP error body in ``data``."""
    data = exc.to_dict()
    if exc.trace_id:
        data["trace_id"] = exc.trace_id
    return MCPError(exc.jsonrpc_code, exc.message, data)


def _offset_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["o"]
        if isinstance(value, int) and value >= 0:
            return value
    except (ValueError, KeyError, TypeError):
        pass
    raise MCPError(types.INVALID_PARAMS, "Invalid cursor.", {"code": "invalid_cursor"})


class McpSurface:
    """The MCP front door.

    Args:
        gateway: Runs every tool call and resource read.
        settings: Page sizes, result cap, public URL, Host patterns, keep-alive interval.
        dispatcher: Source of change events for subscriptions (``None`` turns Level 3 off).
        stdio_caller: For ``forecourt mcp --stdio``: the caller every request runs as.
    """

    def __init__(
        self,
        gateway: Gateway,
        settings: Settings,
        *,
        dispatcher: OutboxDispatcher | None = None,
        stdio_caller: Caller | None = None,
    ) -> None:
        self.gateway = gateway
        self.settings = settings
        self.catalogue = gateway.catalogue
        self.toolset = ToolSet(gateway.catalogue)
        self._header_annotated: dict[str, bool] = {}
        self.relay = SubscriptionRelay(dispatcher)
        self.listener = ListenHandler(self.relay.bus, max_subscriptions=4096)
        self.stdio_caller = stdio_caller
        self.legacy_registry: SubscriptionRegistry | None = None
        """Where legacy HTTP sessions' subscriptions live (set by the HTTP app; ``None`` for stdio)."""
        self.max_result_bytes = settings.mcp_max_result_bytes
        self.server: Server[Any] = Server(
            "forecourt",
            version=_version(),
            title="Forecourt AutomotiveMCP",
            description="A car dealership's inventory, leads, service lane and deals over AutomotiveMCP.",
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
            on_subscriptions_listen=self.listen,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            # Without this the SDK runs the whole tools/list handler on every 2026-07-28 tools/call, only to
            # validate Mcp-Param-* headers against one schema (measured: ~45% of a call's CPU).
            get_tool_input_schema=self.input_schema_of,
        )
        self.server.middleware.append(self._boundary)

    # ------------------------------------------------------------------ plumbing

    async def _boundary(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Top of the surface: only deliberate JSON-RPC errors leave a handler."""
        try:
            return await call_next(ctx)
        except (MCPError, ValidationError):
            raise
        except ForecourtError as exc:
            raise protocol_error(exc) from None
        except Exception:
            logger.exception("unhandled error in MCP %s", ctx.method)
            raise MCPError(types.INTERNAL_ERROR, "Internal error.", {"code": "internal_error"}) from None

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        """Who sent this request (set by the HTTP guard, or fixed for stdio)."""
        if self.stdio_caller is not None:
            return self.stdio_caller
        request = ctx.request
        caller = request.scope.get(CALLER_KEY) if request is not None else None
        if not isinstance(caller, Caller):
            raise protocol_error(Unauthorized())
        return caller

    def _now(self) -> datetime:
        return datetime.now(UTC)

    async def invoke(
        self,
        caller: Caller,
        action: str,
        payload: dict[str, Any],
        ctx: ServerRequestContext[Any, Any] | None = None,
        *,
        dealership_id: str | None = None,
    ) -> Outcome:
        """Run one action through the gateway as ``caller`` (``dealership_id``: the addressed dealership)."""
        principal = caller.principal
        if principal is not None and principal.expires_at is not None and principal.expires_at <= self._now():
            raise Expired()
        anonymous_dealership: str | None = None
        if principal is None:
            wanted = dealership_id or payload.get("dealership_id")
            anonymous_dealership = wanted if isinstance(wanted, str) and wanted else self.settings.default_dealership
            dealership_id = None
        traceparent = None
        if ctx is not None:
            meta = ctx.meta or {}
            raw = meta.get("traceparent")
            traceparent = raw if isinstance(raw, str) else None
            if traceparent is None and ctx.request is not None:
                traceparent = ctx.request.headers.get("traceparent")
        return await self.gateway.invoke(
            Invocation(
                action=action,
                payload=payload,
                credentials=caller.credentials,
                surface=caller.surface,
                request_id=str(ctx.request_id) if ctx is not None and ctx.request_id is not None else None,
                traceparent=traceparent,
                session_id=caller.session_id,
                principal=principal,
                dealership_id=dealership_id,
                anonymous_dealership=anonymous_dealership,
            )
        )

    async def visible_actions(self, caller: Caller) -> list[Action]:
        """The exposed actions ``caller`` may call (the gateway's own decision)."""
        if caller.principal is None:
            return [a for a in self.catalogue.all() if a.anonymous_allowed and exposed(a)]
        return [a for a in await self.gateway.allowed_actions(caller.principal, None) if exposed(a)]

    def input_schema_of(self, name: str) -> dict[str, Any] | None:
        """The ``inputSchema`` of tool ``name`` for the SDK's ``Mcp-Param-*`` header validation, or ``None``.

        ``None`` also for a schema that declares no ``x-mcp-header`` property: it has nothing to validate, and
        the SDK would otherwise walk the whole schema twice on every call to find that out.
        """
        action = self.toolset.action_for(name)
        if action is None:
            return None
        schema = self.toolset.tool(action).input_schema
        annotated = self._header_annotated.get(name)
        if annotated is None:
            annotated = self._header_annotated[name] = X_MCP_HEADER in json.dumps(schema)
        return schema if annotated else None

    def anonymous_tool(self, name: str) -> bool:
        """Whether tool ``name`` may be called without credentials."""
        action = self.toolset.action_for(name)
        return action is not None and action.anonymous_allowed

    def scope_for(self, method: str | None, tool: str | None) -> str:
        """The scope(s) to name in a challenge: the tool's, else every read scope."""
        if method == "tools/call" and tool:
            action = self.toolset.action_for(tool)
            if action is not None and action.scope:
                return action.scope
        return " ".join(sorted({a.scope for a in self.catalogue.all() if exposed(a) and a.scope.endswith(":read")}))

    def manifest(self) -> dict[str, Any]:
        """The AutomotiveMCP manifest of this server."""
        return manifest(self.catalogue, self.settings, eventing=self.relay.enabled)

    # ------------------------------------------------------------------ tools

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """``tools/list``: what this caller may call, nothing more."""
        tools = self.toolset.tools(await self.visible_actions(self.caller(ctx)))
        start = _offset(params.cursor if params else None)
        page = tools[start : start + TOOLS_PAGE]
        following = _offset_cursor(start + TOOLS_PAGE) if start + TOOLS_PAGE < len(tools) else None
        return types.ListToolsResult(tools=page, next_cursor=following)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """``tools/call``: one gateway invocation; its failures come back as tool errors."""
        action = self.toolset.action_for(params.name)
        if action is None:
            raise MCPError(types.INVALID_PARAMS, "Unknown tool.", {"code": "action.unknown"})
        caller = self.caller(ctx)
        arguments = dict(params.arguments or {})
        addressed = arguments.pop("dealership_id", None) if addressed_separately(action) else None
        if addressed is not None and not isinstance(addressed, str):
            return error_result(InvalidParams("dealership_id must be a string.", details={"field": "dealership_id"}))
        try:
            outcome = await self.invoke(caller, action.name, arguments, ctx, dealership_id=addressed)
        except ForecourtError as exc:
            return error_result(exc)
        return success_result(action, outcome.output, max_bytes=self.max_result_bytes)

    # ------------------------------------------------------------------ resources

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """``resources/templates/list``: the URI scheme."""
        return types.ListResourceTemplatesResult(resource_templates=resources.templates())

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """``resources/list``: manifest, dealerships, collections, then vehicles page by page."""
        caller = self.caller(ctx)
        principal = self._require_principal(caller)
        allowed = {a.name for a in await self.gateway.allowed_actions(principal, None)}

        async def invoke(action: str, payload: dict[str, Any]) -> Outcome:
            return await self.invoke(caller, action, payload, ctx)

        size = min(self.settings.max_page_size, 50)
        return await resources.list_page(principal, allowed, params.cursor if params else None, size, invoke)

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """``resources/read``: a gateway read (no side effects) of one URI."""
        uri = str(params.uri)
        parsed = parse_uri(uri)
        if parsed is None:
            raise resources.not_found(uri)
        caller = self.caller(ctx)
        if parsed.kind == "manifest":
            output: Any = self.manifest()
        else:
            action, payload = resources.read_request(parsed)
            output = (await self.invoke(caller, action, payload, ctx)).output
        text = dumps(output)
        if len(text) > self.max_result_bytes:
            raise MCPError(
                types.INVALID_PARAMS, "The resource is too large; page with ?limit=.", {"code": "mcp.result_too_large"}
            )
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=resources.JSON, text=text)]
        )

    # ------------------------------------------------------------------ subscriptions

    def _require_principal(self, caller: Caller) -> Principal:
        if caller.principal is None:
            raise protocol_error(Unauthorized())
        return caller.principal

    async def authorize_watch(self, caller: Caller, uri: str) -> ResourceUri:
        """The parsed URI when ``caller`` may read (so watch) it; the read's own refusal otherwise."""
        parsed = parse_uri(uri)
        if parsed is None or parsed.kind not in ("item", "collection"):
            raise MCPError(
                types.INVALID_PARAMS,
                "Only resource and collection URIs can be subscribed.",
                {"code": "invalid_params", "details": {"uri": uri[:256]}},
            )
        principal = self._require_principal(caller)
        assert parsed.collection is not None
        assert parsed.dealership_id is not None
        if principal.expires_at is not None and principal.expires_at <= self._now():
            raise protocol_error(Expired())
        action = self.catalogue.get(parsed.collection.get_action)
        dealership = await self.gateway.tenancy.dealership(parsed.dealership_id)
        if action is None:
            raise resources.not_found(uri)
        if dealership is None:
            raise protocol_error(TenancyDenied())
        policies = await self.gateway.tenancy.policies(principal.company_id)
        decision = decide(action, principal, dealership=dealership, policies=policies)
        if not decision.allowed:
            assert decision.error is not None
            raise protocol_error(decision.error)
        return parsed

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/subscribe`` (2025-11-25): updates go out on the session's standalone stream."""
        uri = str(params.uri)
        caller = self.caller(ctx)
        parsed = await self.authorize_watch(caller, uri)
        assert parsed.dealership_id is not None
        if caller.session_id is not None and self.legacy_registry is not None:
            # An HTTP session: any replica may hold its stream, so the subscription goes where all can see it.
            await self.legacy_registry.add(caller.session_id, uri)
            return types.EmptyResult()
        conn = ctx.session._connection  # the per-session connection: its lifetime is the subscription's
        key = conn.session_id or f"conn-{id(conn)}"
        if key in self.relay.sessions.get(uri, {}):
            return types.EmptyResult()
        await self.relay.acquire(parsed.dealership_id)
        self.relay.add_session(uri, key, ctx.session, parsed.dealership_id)
        if not conn.state.get("forecourt.subscriptions"):
            conn.state["forecourt.subscriptions"] = True
            conn.exit_stack.callback(self.relay.drop_session, key)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/unsubscribe`` (2025-11-25)."""
        caller = self.caller(ctx)
        if caller.session_id is not None and self.legacy_registry is not None:
            await self.legacy_registry.remove(caller.session_id, str(params.uri))
            return types.EmptyResult()
        conn = ctx.session._connection
        dealership_id = self.relay.remove_session(str(params.uri), conn.session_id or f"conn-{id(conn)}")
        if dealership_id is not None:
            self.relay.release(dealership_id)
        return types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): authorize every URI, follow its dealership, then stream."""
        caller = self.caller(ctx)
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
                await self.relay.acquire(dealership_id)
                acquired.append(dealership_id)
            return await self.listener(ctx, params)
        finally:
            for dealership_id in acquired:
                self.relay.release(dealership_id)

    # ------------------------------------------------------------------ prompts

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        """``prompts/list``."""
        return types.ListPromptsResult(prompts=prompts.prompt_list())

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        """``prompts/get``: text that points the model at the right resources and tools."""
        principal = self.caller(ctx).principal
        default = None
        if principal is not None and len(principal.dealership_ids) == 1:
            default = next(iter(principal.dealership_ids))
        return prompts.render(params.name, params.arguments, default)

    # ------------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        """End listen streams gracefully and stop following events."""
        self.listener.close()
        with contextlib.suppress(Exception):
            await self.relay.close()


def _version() -> str:
    from forecourt.surfaces.mcp.manifest import server_version

    return server_version()
