"""The MCP front door's side of federation: what ``/mcp`` does with a company's upstream MCP servers.

:func:`install_federation` wraps a few of the :class:`~forecourt.surfaces.mcp.server.McpSurface` request
handlers through the SDK's public ``Server.add_request_handler`` (each wrapper handles the upstream case and
hands everything else to the surface's own handler, unchanged), so the surface needs no federation code:

- ``tools/list``: upstream tools are catalogue actions, so they are listed by the surface's own rule (the
  gateway's decision: only the owning company's members, scopes and policy); hidden forwarding actions
  (names with ``:``) are left out;
- ``tools/call`` of an upstream tool: one ``Gateway.invoke`` (policy, limits, audit), then the upstream's
  ``CallToolResult`` is returned as is (text, images, embedded resources, ``structuredContent``, ``isError``);
  the upstream's progress notifications are relayed when the caller sent a ``progressToken``, and what the
  upstream asks during the call — ``sampling/createMessage``, ``elicitation/create``, ``notifications/message``
  — goes to this caller only, when it declared the capability (relay.py, mcp_relay.py; 2026-07-28 clients get
  ``input_required`` rounds). A JSON-RPC error of the upstream comes back as that JSON-RPC error. With a
  pass-through upstream (``namespace: ""``), a tool name the gateway does not list is sent to that upstream
  (through the pipeline, as its ``...#call`` action), so the upstream's own "unknown tool" answer reaches the
  client;
- ``resources/list`` and ``resources/templates/list`` (first page) add the upstreams' resources;
  ``resources/read``, ``resources/subscribe`` and ``resources/unsubscribe`` of a URI that is not Forecourt's
  go to the upstream that lists it (else the company's pass-through upstream). One upstream subscription is
  shared by every client session watching that URI; updates fan out to those sessions;
- ``prompts/list`` adds upstream prompts (named like tools: ``<namespace>.<prompt>``); ``prompts/get`` of
  such a name goes to the upstream;
- ``completion/complete`` (added when the surface has none): a reference to an upstream prompt (by its listed
  name) or to an upstream resource template goes to that upstream; any other reference gets no suggestions;
- ``logging/setLevel`` is accepted (``{}``). The upstream's log messages of a call are relayed to its caller
  (every level on a 2025-11-25 session; on 2026-07-28 the levels the request opted in to); log messages that
  belong to no call are not relayed.

The upstream session is shared, so per-caller state on it (subscriptions) is kept here, per client session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from forecourt.adapters.upstream.adapter import PROGRESS
from forecourt.adapters.upstream.hub import UpstreamHub
from forecourt.adapters.upstream.mcp_relay import STATE_PREFIX, InputRounds, PendingCall, SessionRelay
from forecourt.adapters.upstream.pool import UpstreamProtocolError, UpstreamSession
from forecourt.adapters.upstream.relay import RELAY, CallRelay
from forecourt.adapters.upstream.spec import ADAPTER_ID, forward_action_name, tool_name
from forecourt.errors import ForecourtError, InternalError
from forecourt.gateway.base import Outcome, Principal

if TYPE_CHECKING:
    from forecourt.surfaces.mcp.http import Caller
    from forecourt.surfaces.mcp.server import McpSurface

logger = logging.getLogger(__name__)
Ctx = ServerRequestContext[Any, Any]
Handler = Callable[[Ctx, Any], Awaitable[Any]]
_WRAPPED = (
    ("tools/list", types.PaginatedRequestParams),
    ("tools/call", types.CallToolRequestParams),
    ("resources/list", types.PaginatedRequestParams),
    ("resources/templates/list", types.PaginatedRequestParams),
    ("resources/read", types.ReadResourceRequestParams),
    ("resources/subscribe", types.SubscribeRequestParams),
    ("resources/unsubscribe", types.UnsubscribeRequestParams),
    ("prompts/list", types.PaginatedRequestParams),
    ("prompts/get", types.GetPromptRequestParams),
)


def _session_key(ctx: Ctx) -> str:
    conn = ctx.session._connection  # the per-MCP-session connection (see /tmp notes on the SDK)
    return conn.session_id or f"conn-{id(conn)}"


class Federation:
    """Handler wrappers for one :class:`McpSurface` (see the module docstring)."""

    def __init__(self, surface: McpSurface, hub: UpstreamHub) -> None:
        self.surface = surface
        self.hub = hub
        self.original: dict[str, Handler] = {}
        self.watchers: dict[tuple[str, str], dict[str, Any]] = {}
        self.rounds = InputRounds()
        self._tasks: set[asyncio.Task[Any]] = set()

    def install(self) -> None:
        """Wrap the surface's handlers and follow the hub's change events."""
        server = self.surface.server
        for method, params_type in _WRAPPED:
            entry = server.get_request_handler(method)
            if entry is None:
                continue
            self.original[method] = entry.handler
            server.add_request_handler(method, params_type, getattr(self, "on_" + method.replace("/", "_")))
        if server.get_request_handler("completion/complete") is None:
            server.add_request_handler("completion/complete", types.CompleteRequestParams, self.on_complete)
        if server.get_request_handler("logging/setLevel") is None:
            server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.on_set_level)
        self.hub.resource_listeners.append(self._resource_updated)

    # ------------------------------------------------------------------ helpers

    async def _sessions(self, principal: Principal | None) -> list[UpstreamSession]:
        """The caller's company's upstreams whose forwarding action the gateway lets it call."""
        if principal is None or principal.company_id is None:
            return []
        await self.hub.load()
        sessions = self.hub.of_company(principal.company_id)
        if not sessions:
            return []
        allowed = {a.name for a in await self.surface.gateway.allowed_actions(principal, None)}
        return [s for s in sessions if forward_action_name(s.registered.company_id, s.spec.id) in allowed]

    async def _invoke(self, ctx: Ctx, caller: Caller, action: str, payload: dict[str, Any]) -> Outcome:
        try:
            return await self.surface.invoke(caller, action, payload, ctx)
        except UpstreamProtocolError as exc:
            code = exc.details.get("upstream_code")
            raise MCPError(code if isinstance(code, int) else types.INTERNAL_ERROR, exc.message) from None

    async def _forward(self, ctx: Ctx, session: UpstreamSession, payload: dict[str, Any]) -> Any:
        caller = self.surface.caller(ctx)
        name = forward_action_name(session.registered.company_id, session.spec.id)
        try:
            return (await self._invoke(ctx, caller, name, payload)).output
        except ForecourtError as exc:
            from forecourt.surfaces.mcp.server import protocol_error

            raise protocol_error(exc) from None

    async def _for_uri(self, ctx: Ctx, uri: str) -> UpstreamSession | None:
        from forecourt.surfaces.mcp.uris import parse_uri

        if parse_uri(uri) is not None:
            return None
        sessions = await self._sessions(self.surface.caller(ctx).principal)
        for session in sessions:
            if any(str(r.uri) == uri for r in session.resources):
                return session
        for session in sessions:
            if any(uri.startswith(t.uri_template.split("{", 1)[0]) for t in session.resource_templates):
                return session
        return next((s for s in sessions if s.spec.passthrough), None)

    def _progress(self, ctx: Ctx, params: types.CallToolRequestParams) -> Any:
        meta: dict[str, Any] = dict(params.meta or {})
        token = meta.get("progress_token", meta.get("progressToken", (ctx.meta or {}).get("progressToken")))
        if not isinstance(token, str | int):
            return None

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            with contextlib.suppress(Exception):
                await ctx.session.send_progress_notification(
                    token, progress, total, message, related_request_id=str(ctx.request_id)
                )

        return relay

    # ------------------------------------------------------------------ tools

    async def on_tools_list(self, ctx: Ctx, params: types.PaginatedRequestParams) -> types.ListToolsResult:
        """The surface's list, without the hidden forwarding actions."""
        await self.hub.load()
        result: types.ListToolsResult = await self.original["tools/list"](ctx, params)
        tools = [t for t in result.tools if ":" not in t.name]
        return result.model_copy(update={"tools": tools}) if len(tools) != len(result.tools) else result

    async def on_tools_call(
        self, ctx: Ctx, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Upstream tools (and unknown names of a pass-through upstream) run here; the rest as before."""
        if params.request_state is not None and params.request_state.startswith(STATE_PREFIX):
            return await self.rounds.resume(ctx, self.surface.caller(ctx), params)
        action = None if ":" in params.name else self.surface.toolset.action_for(params.name)
        if action is not None and action.adapter == ADAPTER_ID:
            return await self._call(ctx, params, action.name, dict(params.arguments or {}))
        if action is None:
            caller = self.surface.caller(ctx)
            for session in await self._sessions(caller.principal):
                name = forward_action_name(session.registered.company_id, session.spec.id) + "#call"
                if session.spec.passthrough and self.hub.binding(name) is not None:
                    payload = {"name": params.name, "arguments": dict(params.arguments or {})}
                    return await self._call(ctx, params, name, payload)
            if ":" in params.name:
                raise MCPError(types.INVALID_PARAMS, "Unknown tool.", {"code": "action.unknown"})
        result: types.CallToolResult = await self.original["tools/call"](ctx, params)
        return result

    async def _call(
        self, ctx: Ctx, params: types.CallToolRequestParams, action: str, payload: dict[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        caller = self.surface.caller(ctx)
        if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # No requests to a 2026-07-28 client: the call runs on while its rounds answer input_required.

            async def run(call: PendingCall) -> types.CallToolResult:
                return await self._relayed(ctx, caller, action, payload, call, call.progress)

            return await self.rounds.start(ctx, caller, params.name, run)
        relay = SessionRelay(ctx)
        try:
            return await self._relayed(ctx, caller, action, payload, relay, self._progress(ctx, params))
        finally:
            relay.close()

    async def _relayed(
        self, ctx: Ctx, caller: Caller, action: str, payload: dict[str, Any], relay: CallRelay, progress: Any
    ) -> types.CallToolResult:
        """The one ``Gateway.invoke`` of an upstream call, with ``relay`` receiving what the upstream asks."""
        from forecourt.surfaces.mcp.tools import error_result

        progress_token = PROGRESS.set(progress)
        relay_token = RELAY.set(relay)
        try:
            outcome = await self._invoke(ctx, caller, action, payload)
        except ForecourtError as exc:
            return error_result(exc)
        finally:
            RELAY.reset(relay_token)
            PROGRESS.reset(progress_token)
        try:
            return types.CallToolResult.model_validate(outcome.output)
        except ValidationError:
            logger.warning("upstream result of %s is not a CallToolResult", action[:100])
            return error_result(InternalError())

    # ------------------------------------------------------------------ resources

    async def on_resources_list(self, ctx: Ctx, params: types.PaginatedRequestParams) -> types.ListResourcesResult:
        """The surface's resources, plus (on the first page) the upstreams'."""
        result: types.ListResourcesResult = await self.original["resources/list"](ctx, params)
        if params.cursor:
            return result
        extra = [r for s in await self._sessions(self.surface.caller(ctx).principal) for r in s.resources]
        return result.model_copy(update={"resources": [*result.resources, *extra]}) if extra else result

    async def on_resources_templates_list(
        self, ctx: Ctx, params: types.PaginatedRequestParams
    ) -> types.ListResourceTemplatesResult:
        """The surface's URI templates, plus the upstreams'."""
        result: types.ListResourceTemplatesResult = await self.original["resources/templates/list"](ctx, params)
        if params.cursor:
            return result
        sessions = await self._sessions(self.surface.caller(ctx).principal)
        extra = [t for s in sessions for t in s.resource_templates]
        return (
            result.model_copy(update={"resource_templates": [*result.resource_templates, *extra]}) if extra else result
        )

    async def on_resources_read(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        """Upstream URIs are read through the pipeline from their upstream."""
        uri = str(params.uri)
        session = await self._for_uri(ctx, uri)
        if session is None:
            result: types.ReadResourceResult = await self.original["resources/read"](ctx, params)
            return result
        output = await self._forward(ctx, session, {"op": "resources/read", "uri": uri})
        return types.ReadResourceResult.model_validate(output)

    async def on_resources_subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        """One upstream subscription per URI, shared by the client sessions watching it."""
        uri = str(params.uri)
        session = await self._for_uri(ctx, uri)
        if session is None:
            result: types.EmptyResult = await self.original["resources/subscribe"](ctx, params)
            return result
        watchers = self.watchers.setdefault((session.key, uri), {})
        if not watchers:
            try:
                await self._forward(ctx, session, {"op": "resources/subscribe", "uri": uri})
            except BaseException:
                self.watchers.pop((session.key, uri), None)
                raise
        key = _session_key(ctx)
        if key not in watchers:
            watchers[key] = ctx.session
            ctx.session._connection.exit_stack.callback(self._drop_watcher, session.key, uri, key)
        return types.EmptyResult()

    async def on_resources_unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        """Stop watching; the upstream subscription ends with its last watcher."""
        uri = str(params.uri)
        session = await self._for_uri(ctx, uri)
        if session is None:
            result: types.EmptyResult = await self.original["resources/unsubscribe"](ctx, params)
            return result
        watchers = self.watchers.get((session.key, uri), {})
        watchers.pop(_session_key(ctx), None)
        if not watchers:
            self.watchers.pop((session.key, uri), None)
            await self._forward(ctx, session, {"op": "resources/unsubscribe", "uri": uri})
        return types.EmptyResult()

    def _drop_watcher(self, upstream: str, uri: str, key: str) -> None:
        watchers = self.watchers.get((upstream, uri))
        if watchers is not None:
            watchers.pop(key, None)
            if not watchers:
                del self.watchers[(upstream, uri)]

    def _resource_updated(self, upstream: str, uri: str) -> None:
        for session in list(self.watchers.get((upstream, uri), {}).values()):
            task = asyncio.get_running_loop().create_task(session.send_resource_updated(uri))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ prompts

    async def _prompt_names(self, principal: Principal | None) -> dict[str, tuple[UpstreamSession, types.Prompt]]:
        found: dict[str, tuple[UpstreamSession, types.Prompt]] = {}
        for session in await self._sessions(principal):
            for prompt in session.prompts:
                found.setdefault(tool_name(session.spec.prefix, prompt.name), (session, prompt))
        return found

    async def on_prompts_list(self, ctx: Ctx, params: types.PaginatedRequestParams) -> types.ListPromptsResult:
        """The surface's prompts, plus the upstreams' (namespaced like their tools)."""
        result: types.ListPromptsResult = await self.original["prompts/list"](ctx, params)
        if params.cursor:
            return result
        own = {p.name for p in result.prompts}
        named = await self._prompt_names(self.surface.caller(ctx).principal)
        extra = [p.model_copy(update={"name": n}) for n, (_, p) in named.items() if n not in own]
        return result.model_copy(update={"prompts": [*result.prompts, *extra]}) if extra else result

    async def on_prompts_get(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        """Upstream prompts are fetched through the pipeline; the surface's own as before."""
        from forecourt.surfaces.mcp import prompts as own_prompts

        if params.name not in {p.name for p in own_prompts.prompt_list()}:
            found = (await self._prompt_names(self.surface.caller(ctx).principal)).get(params.name)
            if found is not None:
                session, prompt = found
                payload = {"op": "prompts/get", "name": prompt.name, "arguments": dict(params.arguments or {})}
                return types.GetPromptResult.model_validate(await self._forward(ctx, session, payload))
        result: types.GetPromptResult = await self.original["prompts/get"](ctx, params)
        return result

    # ------------------------------------------------------------------ completion

    async def on_complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Suggestions for an upstream prompt's or resource template's argument come from that upstream."""
        ref = params.ref
        session: UpstreamSession | None = None
        upstream_ref: dict[str, Any] = ref.model_dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(ref, types.PromptReference):
            found = (await self._prompt_names(self.surface.caller(ctx).principal)).get(ref.name)
            if found is not None:
                session, prompt = found
                upstream_ref["name"] = prompt.name
        else:
            session = await self._for_uri(ctx, ref.uri)
        if session is None:
            return types.CompleteResult(completion=types.Completion(values=[]))
        payload: dict[str, Any] = {
            "op": "completion/complete",
            "ref": upstream_ref,
            "argument": params.argument.model_dump(mode="json", by_alias=True),
        }
        return types.CompleteResult.model_validate(await self._forward(ctx, session, payload))

    # ------------------------------------------------------------------ logging

    async def on_set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        """Accepted; the gateway sends no log notifications of its own (see the module docstring)."""
        return types.EmptyResult()


def install_federation(surface: McpSurface, hub: UpstreamHub | None) -> Federation | None:
    """Connect ``surface`` to the upstream registry (no-op when ``hub`` is ``None``)."""
    if hub is None:
        return None
    federation = Federation(surface, hub)
    federation.install()
    return federation
