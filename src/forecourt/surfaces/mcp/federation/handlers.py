"""The MCP front door's side of federation: what ``/mcp`` does with a company's upstream MCP servers.

The :class:`~forecourt.surfaces.mcp.server.McpSurface` registers its handlers once, on the SDK's ``Server``
constructor; when it has an upstream hub, each of its handlers asks the :class:`Federation` first, which answers
the upstream case and returns ``None`` for everything that is Forecourt's own (``completion/complete`` and
``logging/setLevel`` are registered as the federation's handlers). What each method does:

- ``tools/list``: upstream tools are catalogue actions, so they are listed by the surface's own rule (the
  gateway's decision: only the owning company's members, scopes and policy); hidden forwarding actions
  (names with ``:``) are left out;
- ``tools/call`` of an upstream tool: one ``Gateway.invoke`` (policy, limits, audit), then the upstream's
  ``CallToolResult`` is returned as is (text, images, embedded resources, ``structuredContent``, ``isError``);
  the upstream's progress notifications are relayed when the caller sent a ``progressToken``, and what the
  upstream asks during the call — ``sampling/createMessage``, ``elicitation/create``, ``notifications/message``
  — goes to this caller only, when it declared the capability (``adapters/upstream/relay.py``,
  :mod:`.relay`; 2026-07-28 clients get ``input_required`` rounds). A JSON-RPC error of the upstream comes back
  as that JSON-RPC error. With a pass-through upstream (``namespace: ""``), a tool name the gateway does not list
  is sent to that upstream (through the pipeline, as its ``...#call`` action), so the upstream's own "unknown
  tool" answer reaches the client;
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
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from forecourt.adapters.errors import UpstreamProtocolError
from forecourt.adapters.upstream.adapter import PROGRESS
from forecourt.adapters.upstream.hub import UpstreamHub
from forecourt.adapters.upstream.pool import UpstreamSession
from forecourt.adapters.upstream.relay import RELAY, CallRelay
from forecourt.domain.upstreams import ADAPTER_ID, forward_action_name, tool_name
from forecourt.errors import ForecourtError, InternalError
from forecourt.gateway.base import Outcome, Principal
from forecourt.surfaces.marks import mcp_result
from forecourt.surfaces.mcp.federation.relay import STATE_PREFIX, InputRounds, PendingCall, SessionRelay
from forecourt.surfaces.mcp.sdk import connection_of
from forecourt.surfaces.mcp.tools import error_result, protocol_error
from forecourt.surfaces.mcp.uris import parse_uri

if TYPE_CHECKING:
    from forecourt.contract import Action
    from forecourt.surfaces.mcp.caller import Caller
    from forecourt.surfaces.mcp.server import McpSurface

logger = logging.getLogger(__name__)
Ctx = ServerRequestContext[Any, Any]


def _session_key(ctx: Ctx) -> str:
    conn = connection_of(ctx)
    return conn.session_id or f"conn-{id(conn)}"


class Federation:
    """The upstream side of one :class:`McpSurface`'s handlers (see the module docstring)."""

    def __init__(self, surface: McpSurface, hub: UpstreamHub) -> None:
        self.surface = surface
        self.hub = hub
        self.watchers: dict[tuple[str, str], dict[str, Any]] = {}
        self.rounds = InputRounds()
        self._tasks: set[asyncio.Task[Any]] = set()
        hub.resource_listeners.append(self._resource_updated)

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
            raise protocol_error(exc) from None

    async def _for_uri(self, ctx: Ctx, uri: str) -> UpstreamSession | None:
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

    async def refresh(self) -> None:
        """Bring the upstream tools in the catalogue up to date (before a listing)."""
        await self.hub.load()

    async def call_tool(
        self, ctx: Ctx, params: types.CallToolRequestParams, action: Action | None
    ) -> types.CallToolResult | types.InputRequiredResult | None:
        """Upstream tools (and unknown names of a pass-through upstream) run here; ``None`` for Forecourt's own."""
        if params.request_state is not None and params.request_state.startswith(STATE_PREFIX):
            return await self.rounds.resume(ctx, self.surface.caller(ctx), params)
        if action is not None and action.adapter == ADAPTER_ID:
            return await self._call(ctx, params, action.name, dict(params.arguments or {}))
        if action is None:
            caller = self.surface.caller(ctx)
            for session in await self._sessions(caller.principal):
                name = forward_action_name(session.registered.company_id, session.spec.id) + "#call"
                if session.spec.passthrough and self.hub.binding(name) is not None:
                    payload = {"name": params.name, "arguments": dict(params.arguments or {})}
                    return await self._call(ctx, params, name, payload)
        return None

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
            return types.CallToolResult.model_validate(mcp_result(outcome.output, outcome))  # surfaces/marks.py
        except ValidationError:
            logger.warning("upstream result of %s is not a CallToolResult", action[:100])
            return error_result(InternalError())

    # ------------------------------------------------------------------ resources

    async def resources(self, ctx: Ctx) -> list[types.Resource]:
        """The upstreams' resources (listed after Forecourt's on the first page)."""
        return [r for s in await self._sessions(self.surface.caller(ctx).principal) for r in s.resources]

    async def resource_templates(self, ctx: Ctx) -> list[types.ResourceTemplate]:
        """The upstreams' URI templates."""
        return [t for s in await self._sessions(self.surface.caller(ctx).principal) for t in s.resource_templates]

    async def read_resource(self, ctx: Ctx, uri: str) -> types.ReadResourceResult | None:
        """Upstream URIs are read through the pipeline from their upstream; ``None`` for Forecourt's own."""
        session = await self._for_uri(ctx, uri)
        if session is None:
            return None
        output = await self._forward(ctx, session, {"op": "resources/read", "uri": uri})
        return types.ReadResourceResult.model_validate(output)

    async def subscribe(self, ctx: Ctx, uri: str) -> types.EmptyResult | None:
        """One upstream subscription per URI, shared by the client sessions watching it; ``None`` for our own."""
        session = await self._for_uri(ctx, uri)
        if session is None:
            return None
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
            connection_of(ctx).exit_stack.callback(self._drop_watcher, session.key, uri, key)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Ctx, uri: str) -> types.EmptyResult | None:
        """Stop watching; the upstream subscription ends with its last watcher. ``None`` for our own URIs."""
        session = await self._for_uri(ctx, uri)
        if session is None:
            return None
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

    async def prompts(self, ctx: Ctx, own: set[str]) -> list[types.Prompt]:
        """The upstreams' prompts (namespaced like their tools), except names Forecourt already uses."""
        named = await self._prompt_names(self.surface.caller(ctx).principal)
        return [p.model_copy(update={"name": n}) for n, (_, p) in named.items() if n not in own]

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult | None:
        """An upstream prompt, fetched through the pipeline; ``None`` when the name is not an upstream's."""
        found = (await self._prompt_names(self.surface.caller(ctx).principal)).get(params.name)
        if found is None:
            return None
        session, prompt = found
        payload = {"op": "prompts/get", "name": prompt.name, "arguments": dict(params.arguments or {})}
        return types.GetPromptResult.model_validate(await self._forward(ctx, session, payload))

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
