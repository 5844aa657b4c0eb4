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
import warnings
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.subscriptions import ListenHandler
from mcp.shared.inbound import X_MCP_HEADER_KEY as X_MCP_HEADER
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from forecourt import caching
from forecourt.actions.toolsets import NameMode
from forecourt.contract import Action
from forecourt.domain.tenancy import Member
from forecourt.domain.upstreams import ADAPTER_ID as UPSTREAM_ADAPTER_ID
from forecourt.errors import Expired, ForecourtError, InvalidParams, Unauthorized
from forecourt.events import OutboxDispatcher
from forecourt.gateway.base import Credentials, Invocation, Outcome, Principal
from forecourt.gateway.pipeline import Gateway
from forecourt.settings import Settings
from forecourt.surfaces.marks import mcp_result
from forecourt.surfaces.mcp import prompts, resources, views
from forecourt.surfaces.mcp.caller import Caller
from forecourt.surfaces.mcp.discovery import FIND_TOOLS, rank
from forecourt.surfaces.mcp.federation.handlers import Federation
from forecourt.surfaces.mcp.handshake import DESCRIPTION, INSTRUCTIONS, NAME, TITLE, server_version
from forecourt.surfaces.mcp.http import CALLER_KEY
from forecourt.surfaces.mcp.listchanged import ForecourtServer, ToolListChanges
from forecourt.surfaces.mcp.listing import ToolListing
from forecourt.surfaces.mcp.manifest import manifest
from forecourt.surfaces.mcp.sessions import SubscriptionRegistry
from forecourt.surfaces.mcp.subscriptions import SubscriptionRelay
from forecourt.surfaces.mcp.tools import (
    dumps,
    error_result,
    error_wire,
    exposed,
    protocol_error,
    success_result,
    too_large,
    unknown_tool,
)
from forecourt.surfaces.mcp.uris import parse_uri
from forecourt.surfaces.mcp.watching import Watching, require_principal

if TYPE_CHECKING:
    from forecourt.adapters.upstream.hub import UpstreamHub

logger = logging.getLogger(__name__)

TOOLS_PAGE = 100


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


_binds_headers: caching.HeldMemo[dict[str, Any], bool] = caching.HeldMemo(
    "surfaces.mcp.header_bound_schemas", 1024, lambda schema: X_MCP_HEADER in json.dumps(schema)
)
"""Whether a tool's input schema declares an ``x-mcp-header`` property (by the schema object, held)."""


class McpSurface:
    """The MCP front door.

    Args:
        gateway: Runs every tool call and resource read.
        settings: Page sizes, result cap, public URL, Host patterns, keep-alive interval.
        dispatcher: Source of change events for subscriptions (``None`` turns Level 3 off).
        stdio_caller: For ``forecourt mcp --stdio``: the caller every request runs as.
        hub: The company upstream MCP servers to federate (``None``: none).
    """

    def __init__(
        self,
        gateway: Gateway,
        settings: Settings,
        *,
        dispatcher: OutboxDispatcher | None = None,
        stdio_caller: Caller | None = None,
        hub: UpstreamHub | None = None,
    ) -> None:
        self.gateway = gateway
        self.settings = settings
        self.catalogue = gateway.catalogue
        self.listing = ToolListing(gateway, settings)
        self.toolset = self.listing.toolset
        self.loaded = self.listing.loaded
        self._server_info: dict[str, Any] | None = None
        self.relay = SubscriptionRelay(dispatcher)
        self.listener = ListenHandler(self.relay.bus, max_subscriptions=4096)
        self.stdio_caller = stdio_caller
        self.legacy_registry: SubscriptionRegistry | None = None
        """Where legacy HTTP sessions' subscriptions live (set by the HTTP app; ``None`` for stdio)."""
        self.max_result_bytes = settings.mcp_max_result_bytes
        self.federation = Federation(self, hub) if hub is not None else None
        self.tool_changes = ToolListChanges(hub, self.relay.bus)
        federated = self.federation
        self.watching = Watching(self)
        with warnings.catch_warnings():
            # logging/setLevel is deprecated in 2026-07-28 but still part of the 2025-11-25 era this door serves.
            warnings.filterwarnings("ignore", message="The logging capability is deprecated")
            self.server: ForecourtServer = self._build_server(federated)
        self.server.tool_changes = self.tool_changes
        if stdio_caller is not None and stdio_caller.principal is not None:
            self.server.stdio_company = stdio_caller.principal.company_id
        self.server.middleware.append(self._boundary)

    def _build_server(self, federated: Federation | None) -> ForecourtServer:
        return ForecourtServer(
            NAME,
            version=server_version(),
            title=TITLE,
            description=DESCRIPTION,
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.watching.subscribe,
            on_unsubscribe_resource=self.watching.unsubscribe,
            on_subscriptions_listen=self.watching.listen,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            on_completion=federated.on_complete if federated else None,
            on_set_logging_level=federated.on_set_level if federated else None,
            # Without this the SDK runs the whole tools/list handler on every 2026-07-28 tools/call, only to
            # validate Mcp-Param-* headers against one schema (measured: ~45% of a call's CPU).
            get_tool_input_schema=self.input_schema_of,
        )

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
        request_id: str | None = None,
        traceparent: str | None = None,
    ) -> Outcome:
        """Run one action through the gateway as ``caller`` (``dealership_id``: the addressed dealership).

        ``request_id`` and ``traceparent`` come from ``ctx`` when the SDK dispatched the request.
        """
        principal = caller.principal
        if principal is not None and principal.expires_at is not None and principal.expires_at <= self._now():
            raise Expired()
        anonymous_dealership: str | None = None
        if principal is None:
            wanted = dealership_id or payload.get("dealership_id")
            anonymous_dealership = wanted if isinstance(wanted, str) and wanted else self.settings.default_dealership
            dealership_id = None
        if ctx is not None:
            request_id = str(ctx.request_id) if ctx.request_id is not None else None
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
                request_id=request_id,
                traceparent=traceparent,
                session_id=caller.session_id,
                principal=principal,
                dealership_id=dealership_id,
                anonymous_dealership=anonymous_dealership,
            )
        )

    async def visible_actions(self, caller: Caller) -> list[Action]:
        """The exposed actions ``caller`` may call (the gateway's own decision)."""
        return await self.listing.visible_actions(caller)

    def input_schema_of(self, name: str) -> dict[str, Any] | None:
        """The ``inputSchema`` of tool ``name`` for the SDK's ``Mcp-Param-*`` header validation, or ``None``.

        ``None`` also for a schema that declares no ``x-mcp-header`` property: it has nothing to validate, and
        the SDK would otherwise walk the whole schema twice on every call to find that out.
        """
        action = self.toolset.action_for(name)
        if action is None:
            return None
        schema = self.toolset.tool(action).input_schema
        return schema if _binds_headers(schema) else None

    def direct_action(self, name: str) -> Action | None:
        """The action of tool ``name`` when a call of it needs nothing of the SDK's transport (see :mod:`.direct`).

        ``None`` for names this surface does not own outright: upstream tools, ``find_tools``, unknown names (a
        pass-through upstream may answer them) and tools whose schema binds ``Mcp-Param-*`` headers.
        """
        if ":" in name:
            return None
        action = self.toolset.action_for(name)
        if action is None or action.adapter == UPSTREAM_ADAPTER_ID or self.input_schema_of(name) is not None:
            return None
        return action

    @property
    def server_info(self) -> dict[str, Any]:
        """This server's ``Implementation`` in wire form (the 2026-07-28 ``serverInfo`` stamp)."""
        if self._server_info is None:
            self._server_info = self.server.server_info_stamp
        return self._server_info

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

    def name_mode(self, caller: Caller) -> NameMode:
        """Canonical or LLM-safe names for this caller (``?names=llm``, else the member's setting)."""
        return self.listing.name_mode(caller)

    async def offered_actions(self, caller: Caller) -> list[Action]:
        """What ``tools/list`` may offer: the caller's effective toolset (its own narrowing its company policies'),
        among the actions the gateway lets it call."""
        return (await self.listing.offer(caller))[0]

    async def member_tools(self, member: Member) -> list[types.Tool]:
        """What ``tools/list`` shows ``member`` connecting with a key of all its scopes (the console's Tools page)."""
        return await self.listed_tools(Caller(Principal.of_member(member), Credentials(), "mcp"))

    async def listed_tools(self, caller: Caller) -> list[types.Tool]:
        """The tools ``tools/list`` shows ``caller`` (:meth:`ToolListing.listed_tools`)."""
        return await self.listing.listed_tools(caller)

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """``tools/list``: what this caller may call, nothing more (and only its toolset)."""
        if self.federation is not None:
            await self.federation.refresh()
        tools = await self.listed_tools(self.caller(ctx))
        start = _offset(params.cursor if params else None)
        page = tools[start : start + TOOLS_PAGE]
        following = _offset_cursor(start + TOOLS_PAGE) if start + TOOLS_PAGE < len(tools) else None
        return types.ListToolsResult(tools=page, next_cursor=following)

    async def find_tools(self, ctx: ServerRequestContext[Any, Any], arguments: dict[str, Any]) -> types.CallToolResult:
        """``find_tools``: the best-matching tools of the caller's toolset; ``load`` adds them to its listing."""
        query, limit, load = arguments.get("query"), arguments.get("limit", 5), arguments.get("load", False)
        if not isinstance(query, str) or not query.strip() or not isinstance(limit, int) or not 1 <= limit <= 20:
            return error_result(InvalidParams(details={"fields": ["query", "limit"]}))
        caller = self.caller(ctx)
        offered = await self.offered_actions(caller)
        mode = self.name_mode(caller)
        found = rank(query, self.toolset.tools(offered, mode), limit)
        if load is True and found:
            names = [a.name for t in found if (a := self.toolset.action_for(t.name)) is not None]
            if self.loaded.add(self.listing.load_key(caller), names):
                await ctx.session.send_notification(
                    types.ToolListChangedNotification(),
                    str(ctx.request_id) if ctx.request_id is not None else None,
                )
        body = {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in found]}
        text = f"{len(found)} matching tools: " + ", ".join(t.name for t in found) if found else "No matching tools."
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """``tools/call``: one gateway invocation; its failures come back as tool errors."""
        action = None if ":" in params.name else self.toolset.action_for(params.name)
        if self.federation is not None:
            federated = await self.federation.call_tool(ctx, params, action)
            if federated is not None:
                return federated
        if action is None:
            if params.name == FIND_TOOLS:
                return await self.find_tools(ctx, dict(params.arguments or {}))
            raise unknown_tool(params.name)
        request = ctx.request
        traceparent = (ctx.meta or {}).get("traceparent")
        if not isinstance(traceparent, str):
            traceparent = request.headers.get("traceparent") if request is not None else None
        wire = await self.run_tool(
            self.caller(ctx),
            action,
            dict(params.arguments or {}),
            modern=ctx.protocol_version in MODERN_PROTOCOL_VERSIONS,
            request_id=str(ctx.request_id) if ctx.request_id is not None else None,
            traceparent=traceparent,
        )
        return types.CallToolResult.model_validate(wire)

    async def run_tool(
        self,
        caller: Caller,
        action: Action,
        arguments: dict[str, Any],
        *,
        modern: bool,
        request_id: str | None,
        traceparent: str | None,
        encoded: bool = False,
    ) -> dict[str, Any]:
        """One call of a local tool, as its ``CallToolResult`` in wire form (failures are tool errors).

        The one home of a tool call's answer: the SDK's handler above and the direct path (:mod:`.direct`), which
        takes ``structuredContent`` already encoded (``encoded``, see :func:`success_result`).
        """
        arguments, view = self.toolset.prepare(action, arguments)

        async def invoke(payload: dict[str, Any]) -> Outcome:
            return await self.invoke(caller, action.name, payload, request_id=request_id, traceparent=traceparent)

        try:
            outcome = await invoke(arguments)
            result = success_result(
                action, outcome.output, max_bytes=self.max_result_bytes, view=view, modern=modern, encoded=encoded
            )
            if result is None:
                result = await self._fit(
                    invoke, action, arguments, outcome.output, view=view, modern=modern, encoded=encoded
                )
        except ForecourtError as exc:
            return error_wire(exc)
        return mcp_result(result, outcome)  # third-party text is marked (surfaces/marks.py)

    async def _fit(
        self,
        invoke: Callable[[dict[str, Any]], Awaitable[Outcome]],
        action: Action,
        arguments: dict[str, Any],
        output: Any,
        *,
        view: str,
        modern: bool,
        encoded: bool = False,
    ) -> dict[str, Any]:
        """A result over budget: the first page that fits (asked again with a smaller limit), or a summary."""
        shaped = views.compact(action.name, output) if view == "compact" else output
        limit_schema = (action.input_schema.get("properties") or {}).get("limit")
        if views.is_page(shaped) and limit_schema is not None:
            fits = views.items_that_fit(shaped, self.max_result_bytes, lambda v: len(dumps(v)))
            if 0 < fits < len(shaped["items"]):
                smaller = await invoke({**arguments, "limit": fits})
                result = success_result(
                    action, smaller.output, max_bytes=self.max_result_bytes, view=view, modern=modern, encoded=encoded
                )
                if result is not None:
                    return result
        dealership = arguments.get("dealership_id") or (
            output.get("dealership_id") if isinstance(output, dict) else None
        )
        return too_large(
            action, shaped, dealership if isinstance(dealership, str) else None, max_bytes=self.max_result_bytes
        )

    # ------------------------------------------------------------------ resources

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """``resources/templates/list``: the URI scheme (and, on the first page, the upstreams')."""
        found = resources.templates()
        if self.federation is not None and not (params and params.cursor):
            found = [*found, *await self.federation.resource_templates(ctx)]
        return types.ListResourceTemplatesResult(resource_templates=found)

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """``resources/list``: manifest, dealerships, collections, then vehicles page by page."""
        caller = self.caller(ctx)
        principal = require_principal(caller)
        allowed = {a.name for a in await self.gateway.allowed_actions(principal, None)}

        async def invoke(action: str, payload: dict[str, Any]) -> Outcome:
            return await self.invoke(caller, action, payload, ctx)

        size = min(self.settings.max_page_size, 50)
        cursor = params.cursor if params else None
        result = await resources.list_page(principal, allowed, cursor, size, invoke)
        if self.federation is not None and not cursor:
            extra = await self.federation.resources(ctx)
            if extra:
                result = result.model_copy(update={"resources": [*result.resources, *extra]})
        return result

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """``resources/read``: a gateway read (no side effects) of one URI."""
        uri = str(params.uri)
        if self.federation is not None:
            federated = await self.federation.read_resource(ctx, uri)
            if federated is not None:
                return federated
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

    # ------------------------------------------------------------------ prompts

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        """``prompts/list`` (and, on the first page, the upstreams' prompts)."""
        own = prompts.prompt_list()
        if self.federation is not None and not (params and params.cursor):
            own = [*own, *await self.federation.prompts(ctx, {p.name for p in own})]
        return types.ListPromptsResult(prompts=own)

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        """``prompts/get``: text that points the model at the right resources and tools."""
        if self.federation is not None and params.name not in prompts.BY_NAME:
            federated = await self.federation.get_prompt(ctx, params)
            if federated is not None:
                return federated
        caller = self.caller(ctx)
        principal = caller.principal
        default = None
        if principal is not None and len(principal.dealership_ids) == 1:
            default = next(iter(principal.dealership_ids))
        llm = self.name_mode(caller) == "llm"
        return prompts.render(params.name, params.arguments, default, llm_names=llm)

    # ------------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        """End listen streams gracefully and stop following events."""
        self.listener.close()
        self.tool_changes.close()
        with contextlib.suppress(Exception):
            await self.relay.close()
