"""The MCP front door's side of relaying: what an upstream asks during a call reaches the client that made it.

:class:`~.handlers.Federation` sets a relay (``forecourt.adapters.upstream.relay.RELAY``) around the one
``Gateway.invoke`` of an upstream tool call. Only the client of that call is ever asked, and only for what it declared:

- ``sampling/createMessage`` needs the client's ``sampling`` capability (``sampling.tools`` when the request
  carries tools), ``elicitation/create`` its ``elicitation`` capability in the request's mode (form or URL).
  Otherwise the upstream gets ``-32601`` at once. A JSON-RPC error of the client goes back to the upstream as
  is; no answer within the call's lifetime (at most :data:`~.relay.RELAY_TIMEOUT_S`) is ``-32001``.
- ``notifications/message`` is passed on in the call's own response stream: every level on a 2025-11-25
  session (as the SDK does), on 2026-07-28 only at or above the level the request opted in to.

How the request reaches the client depends on the connection:

- a stateful session (``forecourt mcp --stdio``): the SDK's request, related to the call;
- a legacy HTTP session (2025-11-25 on the stateless transport): the call POST's
  :class:`~forecourt.surfaces.mcp.backchannel.BackChannel`, with the capabilities its session id carries;
- 2026-07-28 (no server-to-client requests at all): :class:`InputRounds` — the call keeps running while its
  tools/call answers ``input_required`` with the upstream's requests, and the client's retry (carrying the
  answers and the ``requestState``) resumes it. The running call lives in the replica that started it, so a
  retry must reach that replica; elsewhere, or after :data:`ROUND_TTL_S`, it is refused as an invalid
  ``requestState`` (``-32602``) and the client calls again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as types
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel, ValidationError

from forecourt.adapters.upstream.relay import RELAY_TIMEOUT_S, ElicitationAnswer, SamplingAnswer
from forecourt.surfaces.mcp.backchannel import BackChannel
from forecourt.surfaces.mcp.errors import NoBackChannel
from forecourt.surfaces.mcp.sessions import BACKCHANNEL_KEY, CAPABILITIES_KEY

if TYPE_CHECKING:
    from forecourt.surfaces.mcp.caller import Caller

logger = logging.getLogger(__name__)
Ctx = ServerRequestContext[Any, Any]
R = TypeVar("R", bound=BaseModel)

LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
ROUND_TTL_S = 300.0
"""How long a 2026-07-28 call waits for its client's next round (and keeps a result the client has not fetched)."""
MAX_ROUNDS_OPEN = 1000
MAX_BUFFERED_LOGS = 100
STATE_PREFIX = "fcr1."


def at_least(level: str, floor: types.LoggingLevel | None) -> bool:
    """Whether a message at ``level`` passes the opt-in ``floor`` (``None``: nothing passes)."""
    if floor is None:
        return False
    rank = LEVELS.index(level) if level in LEVELS else len(LEVELS) - 1
    return rank >= LEVELS.index(floor)


def _refused(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.METHOD_NOT_FOUND, message=message)


def sampling_refusal(
    capabilities: types.ClientCapabilities | None, params: types.CreateMessageRequestParams
) -> types.ErrorData | None:
    """Why the client cannot be asked to sample, or ``None`` when it can."""
    sampling = capabilities.sampling if capabilities is not None else None
    if sampling is None:
        return _refused("The client does not support sampling.")
    if (params.tools or params.tool_choice) and sampling.tools is None:
        return _refused("The client does not support sampling with tools.")
    return None


def elicitation_refusal(
    capabilities: types.ClientCapabilities | None, params: types.ElicitRequestParams
) -> types.ErrorData | None:
    """Why the client cannot be asked for input, or ``None`` when it can."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return _refused("The client does not support elicitation.")
    if isinstance(params, types.ElicitRequestURLParams):
        return None if elicitation.url is not None else _refused("The client does not support URL elicitation.")
    form = elicitation.form is not None or elicitation.url is None  # {} means form
    return None if form else _refused("The client does not support form elicitation.")


def _sampling_type(params: types.CreateMessageRequestParams) -> type[BaseModel]:
    wants_tools = bool(params.tools or params.tool_choice)
    return types.CreateMessageResultWithTools if wants_tools else types.CreateMessageResult


def _invalid_answer() -> types.ErrorData:
    return types.ErrorData(code=types.INTERNAL_ERROR, message="The client's answer is not a valid result.")


async def _bounded(work: Awaitable[R], ended: asyncio.Event) -> R | types.ErrorData:
    """``work``'s result, or the error the upstream gets when the call ends or the client never answers."""
    task = asyncio.ensure_future(work)
    end = asyncio.ensure_future(ended.wait())
    try:
        done, _ = await asyncio.wait({task, end}, timeout=RELAY_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            return task.result()
        if end in done:
            return types.ErrorData(code=types.INVALID_REQUEST, message="The call this request belongs to has ended.")
        return types.ErrorData(code=types.REQUEST_TIMEOUT, message="The client did not answer in time.")
    except MCPError as exc:
        return exc.error
    except NoBackChannel:
        return _refused("The client's connection cannot carry requests.")
    except ValidationError:
        return _invalid_answer()
    finally:
        task.cancel()
        end.cancel()


class SessionRelay:
    """The relay of one call on a connection that can carry requests to the client (see the module docstring)."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        scope = ctx.request.scope if ctx.request is not None else {}
        channel = scope.get(BACKCHANNEL_KEY)
        self.channel = channel if isinstance(channel, BackChannel) else None
        declared = scope.get(CAPABILITIES_KEY)
        self.capabilities = declared if isinstance(declared, types.ClientCapabilities) else None
        if self.capabilities is None:
            self.capabilities = ctx.session.client_capabilities
        self._ended = asyncio.Event()

    @property
    def log_level(self) -> types.LoggingLevel | None:
        return "debug"  # handshake era: every level, as the SDK's own servers do

    def close(self) -> None:
        """The call is over: requests still waiting get an error."""
        self._ended.set()

    async def sampling(self, params: types.CreateMessageRequestParams) -> SamplingAnswer:
        refusal = sampling_refusal(self.capabilities, params)
        if refusal is not None:
            return refusal
        answer = await self._ask(types.CreateMessageRequest(params=params), _sampling_type(params))
        assert isinstance(answer, types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData)
        return answer

    async def elicitation(self, params: types.ElicitRequestParams) -> ElicitationAnswer:
        refusal = elicitation_refusal(self.capabilities, params)
        if refusal is not None:
            return refusal
        return await self._ask(types.ElicitRequest(params=params), types.ElicitResult)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        with contextlib.suppress(Exception):  # best effort: the stream may be gone
            await self.ctx.session.send_notification(
                types.LoggingMessageNotification(params=params), related_request_id=self.ctx.request_id
            )

    async def _ask(
        self, request: types.CreateMessageRequest | types.ElicitRequest, result_type: type[R]
    ) -> R | types.ErrorData:
        if self._ended.is_set():
            return types.ErrorData(code=types.INVALID_REQUEST, message="The call this request belongs to has ended.")
        if self.ctx.session.can_send_request:
            metadata = ServerMessageMetadata(related_request_id=self.ctx.request_id)
            return await _bounded(self.ctx.session.send_request(request, result_type, metadata=metadata), self._ended)
        if self.channel is None:
            return _refused("The client's connection cannot carry requests.")
        params = request.params.model_dump(by_alias=True, mode="json", exclude_none=True)
        channel = self.channel

        async def ask() -> R:
            return result_type.model_validate(await channel.request(request.method, params), by_name=False)

        return await _bounded(ask(), self._ended)


# ---------------------------------------------------------------------------------------------- 2026-07-28


@dataclass
class _Ask:
    request: types.InputRequest
    result_type: type[BaseModel]
    answer: asyncio.Future[BaseModel] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass
class _Round:
    ctx: Ctx
    level: types.LoggingLevel | None
    progress_token: str | int | None


def _progress_token(ctx: Ctx) -> str | int | None:
    token = (ctx.meta or {}).get("progressToken")
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def _opt_in(ctx: Ctx) -> types.LoggingLevel | None:
    level = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
    return level if isinstance(level, str) and level in LEVELS else None


def owner_of(caller: Caller) -> str:
    """Who may continue a call: the same verified principal (company, member, subject)."""
    principal = caller.principal
    if principal is None:
        return "anonymous"
    return f"{principal.company_id}|{principal.member_id}|{principal.subject}"


class PendingCall:
    """One upstream call of a 2026-07-28 client, running across that client's rounds; also its relay."""

    def __init__(self, token: str, owner: str, tool: str, ctx: Ctx) -> None:
        self.token = token
        self.owner = owner
        self.tool = tool
        self.capabilities = ctx.session.client_capabilities
        self._first_level = _opt_in(ctx)
        self.asks: dict[str, _Ask] = {}
        self.changed = asyncio.Event()
        self.task: asyncio.Task[types.CallToolResult] | None = None
        self.expires_at = time.monotonic() + ROUND_TTL_S
        self._round: _Round | None = None
        self._logs: list[types.LoggingMessageNotificationParams] = []
        self._ended = asyncio.Event()
        self._count = 0

    # -------------------------------------------------------------- relay (called from the upstream session)

    @property
    def log_level(self) -> types.LoggingLevel | None:
        return self._first_level

    async def sampling(self, params: types.CreateMessageRequestParams) -> SamplingAnswer:
        refusal = sampling_refusal(self.capabilities, params)
        if refusal is not None:
            return refusal
        answer = await self._ask(types.CreateMessageRequest(params=params), _sampling_type(params))
        assert isinstance(answer, types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData)
        return answer

    async def elicitation(self, params: types.ElicitRequestParams) -> ElicitationAnswer:
        refusal = elicitation_refusal(self.capabilities, params)
        if refusal is not None:
            return refusal
        answer = await self._ask(types.ElicitRequest(params=params), types.ElicitResult)
        assert isinstance(answer, types.ElicitResult | types.ErrorData)
        return answer

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        current = self._round
        if current is None:
            if len(self._logs) < MAX_BUFFERED_LOGS:
                self._logs.append(params)  # between rounds: delivered with the next one
            return
        await self._send_log(current, params)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The upstream's progress, on the current round's stream when that round asked for progress."""
        current = self._round
        if current is not None and current.progress_token is not None:
            with contextlib.suppress(Exception):
                await current.ctx.session.send_progress_notification(
                    current.progress_token, progress, total, message, related_request_id=str(current.ctx.request_id)
                )

    async def _ask(self, request: types.InputRequest, result_type: type[BaseModel]) -> BaseModel | types.ErrorData:
        if self._ended.is_set():
            return types.ErrorData(code=types.INVALID_REQUEST, message="The call this request belongs to has ended.")
        self._count += 1
        key = f"{request.method.split('/')[0]}-{self._count}"
        ask = _Ask(request, result_type)
        self.asks[key] = ask
        self.changed.set()
        try:
            return await _bounded(asyncio.shield(ask.answer), self._ended)
        finally:
            self.asks.pop(key, None)

    @staticmethod
    async def _send_log(current: _Round, params: types.LoggingMessageNotificationParams) -> None:
        if not at_least(params.level, current.level):
            return
        with contextlib.suppress(Exception):
            await current.ctx.session.send_notification(
                types.LoggingMessageNotification(params=params), related_request_id=current.ctx.request_id
            )

    # -------------------------------------------------------------- rounds (called from the front door)

    def close(self) -> None:
        """The call is over: requests still waiting get an error."""
        self._ended.set()
        self.changed.set()

    def answer(self, responses: types.InputResponses | None) -> None:
        """Hand the client's answers to the requests waiting for them (unknown keys are ignored)."""
        for key, response in (responses or {}).items():
            ask = self.asks.get(key)
            if ask is None or ask.answer.done():
                continue
            try:
                value = ask.result_type.model_validate(response.model_dump(by_alias=True, mode="json"))
            except ValidationError:
                ask.answer.set_exception(MCPError(types.INTERNAL_ERROR, "The client's answer is not a valid result."))
                continue
            ask.answer.set_result(value)

    async def next_result(self, ctx: Ctx) -> types.CallToolResult | types.InputRequiredResult:
        """Run this round: the call's result, or the requests the client must answer first."""
        assert self.task is not None
        current = _Round(ctx, _opt_in(ctx), _progress_token(ctx))
        self.capabilities = ctx.session.client_capabilities or self.capabilities
        self._round = current
        try:
            buffered, self._logs = self._logs, []
            for params in buffered:
                await self._send_log(current, params)
            while True:
                if self.task.done():
                    return self.task.result()
                waiting = {k: a.request for k, a in self.asks.items() if not a.answer.done()}
                if waiting:
                    self.expires_at = time.monotonic() + ROUND_TTL_S
                    return types.InputRequiredResult(input_requests=waiting, request_state=self.token)
                self.changed.clear()
                changed = asyncio.ensure_future(self.changed.wait())
                try:
                    await asyncio.wait({self.task, changed}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    changed.cancel()
        finally:
            self._round = None


class InputRounds:
    """The 2026-07-28 calls of this replica that wait for their client's next round (see the module docstring)."""

    def __init__(self) -> None:
        self.pending: dict[str, PendingCall] = {}

    def _sweep(self) -> None:
        now = time.monotonic()
        for call in list(self.pending.values()):
            if call.expires_at <= now:
                self._end(call)

    async def start(
        self,
        ctx: Ctx,
        caller: Caller,
        tool: str,
        run: Callable[[PendingCall], Coroutine[Any, Any, types.CallToolResult]],
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Start ``run`` (the call, with ``PendingCall`` as its relay) and answer its first round."""
        self._sweep()
        call = PendingCall(STATE_PREFIX + secrets.token_urlsafe(24), owner_of(caller), tool, ctx)

        async def body() -> types.CallToolResult:
            try:
                return await run(call)
            finally:
                call.close()

        call.task = asyncio.get_running_loop().create_task(body(), name="upstream-call-rounds")
        return await self._round(call, ctx)

    async def resume(
        self, ctx: Ctx, caller: Caller, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Continue the call a ``requestState`` names, with the client's answers."""
        self._sweep()
        call = self.pending.get(str(params.request_state))
        if call is None or call.owner != owner_of(caller) or call.tool != params.name:
            raise MCPError(types.INVALID_PARAMS, "Invalid or expired requestState")
        del self.pending[call.token]  # one round at a time: a second retry of the same state is refused
        call.answer(params.input_responses)
        return await self._round(call, ctx)

    async def _round(self, call: PendingCall, ctx: Ctx) -> types.CallToolResult | types.InputRequiredResult:
        try:
            result = await call.next_result(ctx)
        except BaseException:
            self._end(call)  # the client went away (2026-07-28 cancels by closing the stream), or the call failed
            raise
        if not isinstance(result, types.InputRequiredResult):
            self._forget(call)
            return result
        if len(self.pending) >= MAX_ROUNDS_OPEN:
            self._end(call)
            raise MCPError(types.INTERNAL_ERROR, "Too many calls are waiting for input; try again shortly.")
        self.pending[call.token] = call  # parked until the client's next round
        return result

    def _forget(self, call: PendingCall) -> None:
        if self.pending.get(call.token) is call:
            del self.pending[call.token]

    def _end(self, call: PendingCall) -> None:
        self._forget(call)
        call.close()
        if call.task is not None and not call.task.done():
            call.task.cancel()


__all__ = [
    "STATE_PREFIX",
    "InputRounds",
    "PendingCall",
    "SessionRelay",
    "at_least",
    "elicitation_refusal",
    "owner_of",
    "sampling_refusal",
]
