"""The direct path: a single ``tools/call`` of a Forecourt tool, answered as one JSON response.

Most MCP traffic is one ``tools/call`` per POST that runs a Forecourt action and needs nothing from the
transport while it runs: no progress notifications, no requests to the client, no upstream server. For those
the SDK's session manager adds work the answer does not need (a task group, memory streams, an SSE frame for
the 2025-11-25 era, pydantic models of the request and the result). :class:`DirectCalls` sits in front of it
and answers such a call itself:

- the request is checked as the SDK would check it — ``Accept`` and ``Content-Type``, the JSON-RPC envelope,
  and for the 2026-07-28 era the SDK's own validation ladder (:func:`mcp.shared.inbound.classify_inbound_request`:
  ``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` against the body, the version supported);
- the tool call itself is :meth:`McpSurface.run_tool`, the same code the SDK's handler runs (one home);
- the answer is ``application/json`` (the client accepted it; Streamable HTTP lets the server choose), with the
  2026-07-28 envelope the SDK adds (``resultType``, the ``serverInfo`` stamp) in that era.

Anything else — another method, a batch, a progress token, a tool of an upstream server, ``find_tools``, a
tool whose schema binds ``Mcp-Param-*`` headers, a body that does not parse or fails a check — goes to the SDK
unchanged, so every error keeps the SDK's wording and status. The authenticated caller comes from the HTTP
guard (:mod:`.http`); legacy session ids were checked by :mod:`.sessions` before this layer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from mcp.server.streamable_http import check_accept_headers
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from forecourt.contract import Action
from forecourt.surfaces.mcp.caller import Caller
from forecourt.surfaces.mcp.http import CALLER_KEY

if TYPE_CHECKING:
    from forecourt.surfaces.mcp.server import McpSurface

logger = logging.getLogger(__name__)

_INTERNAL_ERROR = -32603
_PROGRESS_KEY = "progressToken"
_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_JSON_HEADERS = [(b"content-type", b"application/json")]


@dataclass(frozen=True)
class DirectCall:
    """A ``tools/call`` the direct path answers."""

    request_id: str | int
    action: Action
    arguments: dict[str, Any]
    modern: bool
    traceparent: str | None


class DirectCalls:
    """ASGI layer in front of the SDK's session manager (see the module docstring).

    Args:
        app: The session manager's ``handle_request``: everything this layer does not answer.
        surface: The MCP surface whose :meth:`~McpSurface.run_tool` answers a call.
        max_body_bytes: Larger bodies go to the SDK (which refuses them).
    """

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        surface: McpSurface,
        *,
        max_body_bytes: int,
    ) -> None:
        self.app = app
        self.surface = surface
        self.max_body_bytes = max_body_bytes
        self.answered = 0
        """Calls answered here (the rest went to the SDK); for tests and diagnostics."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = scope.get(CALLER_KEY)
        if scope["type"] != "http" or scope.get("method") != "POST" or not isinstance(caller, Caller):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        has_json, has_sse = check_accept_headers(request)
        content_type = request.headers.get("content-type", "")
        if not (has_json and has_sse) or not content_type.lower().startswith("application/json"):
            await self.app(scope, receive, send)
            return
        raw, receive = await _read_body(receive, self.max_body_bytes)
        try:
            call = self._plan(raw, request, scope) if raw is not None else None
        except Exception:  # a fault in looking the call over: the SDK's path meets (and reports) it too
            logger.debug("direct path skipped", exc_info=True)
            call = None
        if call is None:
            await self.app(scope, receive, send)
            return
        self.answered += 1
        await self._answer(call, caller, send)

    def _plan(self, raw: bytes, request: Request, scope: Scope) -> DirectCall | None:
        """The call this layer answers, or ``None`` for anything the SDK should see."""
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or body.get("method") != "tools/call":
            return None
        if set(body) != {"jsonrpc", "id", "method", "params"}:
            return None
        request_id = body["id"]
        params = body["params"]
        if isinstance(request_id, bool) or not isinstance(request_id, (str, int)) or not isinstance(params, dict):
            return None
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict) or set(params) - {"name", "arguments", "_meta"}:
            return None
        meta = params.get("_meta", {})
        if not isinstance(meta, dict) or _PROGRESS_KEY in meta:
            return None
        modern = self._era(body, meta, request, scope)
        if modern is None:
            return None
        action = self.surface.direct_action(name)
        if action is None:
            return None
        traceparent = meta.get("traceparent")
        if not isinstance(traceparent, str):
            traceparent = request.headers.get("traceparent")
        return DirectCall(request_id, action, arguments, modern, traceparent)

    @staticmethod
    def _era(body: dict[str, Any], meta: dict[str, Any], request: Request, scope: Scope) -> bool | None:
        """``True`` for a valid 2026-07-28 request, ``False`` for a 2025-11-25 one, ``None`` for the SDK."""
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version in MODERN_PROTOCOL_VERSIONS:
            raw_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers") or ()]
            if find_duplicated_routing_header(raw_headers) is not None:
                return None
            headers: dict[str, str] = {}
            for name, value in raw_headers:
                headers.setdefault(name, value)  # the first of a repeated header, as Starlette's Headers reads it
            verdict = classify_inbound_request(body, headers=headers)
            if not isinstance(verdict, InboundModernRoute):
                return None
            if not isinstance(verdict.client_capabilities, dict) or not _client_info_ok(verdict.client_info):
                return None
            return True
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return None
        if any(key.startswith("io.modelcontextprotocol/") for key in meta):
            return None  # a 2026-07-28 envelope without its headers: the SDK says what is wrong
        return False

    async def _answer(self, call: DirectCall, caller: Caller, send: Send) -> None:
        try:
            result = await self.surface.run_tool(
                caller,
                call.action,
                call.arguments,
                modern=call.modern,
                request_id=str(call.request_id),
                traceparent=call.traceparent,
                encoded=True,  # orjson writes the pre-encoded structuredContent as it is
            )
        except Exception:  # top of the surface: nothing internal reaches the client
            logger.exception("unhandled error in MCP tools/call")
            error = {"code": _INTERNAL_ERROR, "message": "Internal error.", "data": {"code": "internal_error"}}
            status = ERROR_CODE_HTTP_STATUS.get(_INTERNAL_ERROR, 200) if call.modern else 200
            await _send_json(send, status, {"jsonrpc": "2.0", "id": call.request_id, "error": error})
            return
        body = self._encode_result(result, call.modern)
        try:
            request_id = orjson.dumps(call.request_id)
        except TypeError:  # an integer id past 64 bits
            request_id = json.dumps(call.request_id).encode()
        await _send_bytes(send, 200, b'{"jsonrpc":"2.0","id":' + request_id + b',"result":' + body + b"}")

    def _encode_result(self, result: dict[str, Any], modern: bool) -> bytes:
        """A tool result's JSON with the envelope the 2026-07-28 era adds (``result`` itself is left as it is)."""
        if modern:  # the SDK's stamp: added to the result's own _meta (a third-party text mark stays beside it)
            meta = result.get("_meta")
            if meta is None or (isinstance(meta, dict) and meta.get(_SERVER_INFO) is None):
                meta = {**(meta or {}), _SERVER_INFO: self.surface.server_info}
            result = {**result, "resultType": "complete", "_meta": meta}
        return _json_bytes(result)


def _client_info_ok(info: object) -> bool:
    """Whether a 2026-07-28 ``clientInfo`` is absent or the object the SDK accepts (else the SDK answers)."""
    if info is None:
        return True
    return isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """The whole body (``None`` past ``limit`` or on a disconnect), and a ``receive`` that replays what was read."""
    read: list[Message] = []
    size = 0
    complete = False
    while size <= limit:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            complete = True
            break

    async def replay() -> Message:
        return read.pop(0) if read else await receive()

    if not complete:
        return None, replay
    raw = b"".join(m.get("body", b"") for m in read)
    return raw, replay


def _json_bytes(body: Any) -> bytes:
    try:
        return orjson.dumps(body, default=str, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # what orjson refuses (integers past 64 bits)
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str).encode()


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    await _send_bytes(send, status, _json_bytes(body))


async def _send_bytes(send: Send, status: int, payload: bytes) -> None:
    headers = [*_JSON_HEADERS, (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
