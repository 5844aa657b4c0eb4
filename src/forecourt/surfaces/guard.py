"""The request guard: one ASGI middleware in front of every surface that refuses hostile bodies early.

Every front door parses its own body (the REST envelope, the MCP SDK, the A2A SDK), so the limits that
protect the process live here, before any of them: a body larger than ``settings.max_body_bytes`` is
refused with 413 without being read past the limit, and a JSON body that is not valid UTF-8 or nests
deeper than ``settings.max_json_depth`` is refused with 400 before a parser sees it (a deeply nested
document is how a small request exhausts a recursive parser).

The error takes the wire form of the surface the request was addressed to, so a client always gets an
error it can read:

- ``POST /mcp/{action}`` (REST envelope): the seed-001 response envelope with ``status.error``;
- ``POST /mcp`` (MCP Streamable HTTP) and ``POST /dealers/{id}/a2a/jsonrpc`` (A2A JSON-RPC): a JSON-RPC
  error object (the AAP one carries the ``aap.error`` payload in ``error.data``);
- ``/dealers/{id}/a2a/...`` (A2A HTTP+JSON): the ``aap.error`` payload;
- anything else: ``{"error": {code, message, retryable, details}}``.

Errors never quote the request: the body may carry a customer's personal data.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import IO, Any, Protocol

import orjson

from forecourt.errors import ForecourtError, InvalidRequest, PayloadTooLarge
from forecourt.settings import Settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class RejectionLog(Protocol):
    """Where a refused request is recorded (the audit writer)."""

    def record_rejected(self, *, surface: str, action: str, status: int, error_code: str, processed_by: str) -> None:
        """Record one refused request."""


_BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_NOT_JSON_TYPES = ("multipart/", "application/x-www-form-urlencoded", "application/octet-stream", "text/csv")
# A JSON string (with escapes), removed before counting brackets so that brackets inside strings do not count.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_INNERMOST_PAIR = re.compile(rb"[\[{][\]}]")
_A2A_PATH = re.compile(r"^/dealers/[^/]+/a2a(?:/|$)")
_COMPANY_MCP = re.compile(r"^/companies/[^/]+/mcp$")
_CONSOLE_UPLOAD = re.compile(r"^[^/]+/upload$")


class _Refusal(Exception):
    """A guard refusal: the client-visible error and the JSON-RPC code for the JSON-RPC surfaces."""

    def __init__(self, error: ForecourtError, jsonrpc_code: int) -> None:
        super().__init__(error.code)
        self.error = error
        self.jsonrpc_code = jsonrpc_code


def json_nesting_within(body: bytes, limit: int) -> bool:
    """Whether the JSON text ``body`` nests arrays and objects no deeper than ``limit``.

    Runs in regular-expression passes (no Python loop over bytes, no recursion): strings are removed,
    then innermost bracket pairs are peeled off one level per pass. Malformed input that cannot be peeled
    is judged by its count of opening brackets, which is never less than its depth.

    Args:
        body: The raw request body.
        limit: The deepest nesting allowed.

    Returns:
        ``True`` when the nesting is within ``limit``.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return True  # fewer opening brackets in all (strings included) than the limit: no deeper nesting possible
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", body))
    for peeled in range(limit + 1):
        if not brackets:
            return True
        if peeled == limit:
            return False
        reduced = _INNERMOST_PAIR.sub(b"", brackets)
        if reduced == brackets:
            return peeled + brackets.count(b"[") + brackets.count(b"{") <= limit
        brackets = reduced
    return not brackets


def strings_decodable(body: bytes) -> bool:
    """Whether every JSON string in ``body`` decodes to text: valid escapes, no lone or reversed surrogates.

    ``body`` is already known to be UTF-8. Only string tokens with a backslash can hide an undecodable
    value (``"\\ud800"``, ``"\\x41"``, ``"\\u12"``), so only those are decoded, by a strict decoder.
    """
    if b"\\" not in body:
        return True
    for match in _STRING.finditer(body):
        token = match.group()
        if b"\\" in token:
            try:
                orjson.loads(token)
            except orjson.JSONDecodeError:
                return False
    return True


def _surface_of(form: str) -> str:
    return {"rest": "rest", "jsonrpc": "mcp", "aap-rpc": "a2a", "aap": "a2a"}.get(form, "http")


def _action_of(form: str, path: str) -> str:
    if form == "rest":
        return path[len("/mcp/") :] or "-"
    return {"jsonrpc": "mcp", "aap-rpc": "a2a.jsonrpc", "aap": "a2a.http"}.get(form, "http")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _wire_form(path: str) -> str:
    """Which error form the addressed surface speaks: ``rest``, ``jsonrpc``, ``aap-rpc``, ``aap`` or ``plain``."""
    trimmed = path.rstrip("/") or "/"
    if trimmed == "/mcp" or _COMPANY_MCP.match(trimmed):
        return "jsonrpc"
    if path.startswith("/mcp/"):
        return "rest"
    if _A2A_PATH.match(path):
        return "aap-rpc" if trimmed.endswith("/jsonrpc") else "aap"
    return "plain"


def _is_json_request(scope: Scope, form: str) -> bool:
    if form != "plain":
        return True
    content_type = (_header(scope, b"content-type") or "").lower()
    if not content_type:
        return True
    return not content_type.startswith(_NOT_JSON_TYPES)


def error_body(
    form: str, exc: ForecourtError, settings: Settings, *, jsonrpc_code: int | None = None
) -> dict[str, Any]:
    """The body of a guard refusal in the wire form ``form`` (``rest``, ``jsonrpc``, ``aap-rpc``, ``aap``, ``plain``).

    Args:
        form: The wire form of the addressed surface.
        exc: The refusal.
        settings: Supplies the instance name for the REST envelope's ``audit.processedBy``.
        jsonrpc_code: The JSON-RPC error code (default: ``exc.jsonrpc_code``).

    Returns:
        A JSON-serialisable body that never quotes the request.
    """
    rpc_code = exc.jsonrpc_code if jsonrpc_code is None else jsonrpc_code
    if form == "rest":
        body: dict[str, Any] = {
            "id": f"mcp-resp:{uuid.uuid4()}",
            "inResponseTo": None,
            "status": {"code": exc.http_status, "message": exc.message, "error": exc.to_dict()},
            "result": None,
            "audit": {"processedBy": settings.instance_name, "durationMs": 0.0, "trace": ""},
        }
        return body
    if form in ("aap", "aap-rpc"):
        from forecourt.surfaces.a2a.errors import aap_error

        aap = aap_error("SCHEMA_VALIDATION_FAILED", exc.message, details={"forecourt_code": exc.code, **exc.details})
        if form == "aap":
            return aap.payload
        rpc = {"code": rpc_code, "message": exc.message, "data": aap.payload}
        return {"jsonrpc": "2.0", "id": None, "error": rpc}
    if form == "jsonrpc":
        rpc = {"code": rpc_code, "message": exc.message, "data": exc.to_dict()}
        return {"jsonrpc": "2.0", "id": None, "error": rpc}
    return {"error": exc.to_dict()}


class RequestGuard:
    """ASGI middleware: bounded bodies on every route, valid UTF-8 and bounded nesting for JSON ones.

    Args:
        app: The application behind the guard.
        settings: Supplies ``max_body_bytes``, ``max_json_depth`` and ``instance_name``.
    """

    def __init__(self, app: ASGIApp, settings: Settings, rejections: RejectionLog | None = None) -> None:
        self.app = app
        self.settings = settings
        self.rejections = rejections

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the body, then hand the request (with its buffered body) to the app."""
        if scope["type"] != "http" or scope.get("method", "GET") in _BODYLESS_METHODS:
            await self.app(scope, receive, send)
            return
        form = _wire_form(str(scope.get("path", "")))
        declared = _header(scope, b"content-length")
        if self._console_upload(scope) and (declared is None or declared.strip().isdigit()):
            # A console feed upload is held to ``feed_max_bytes`` (the scheduled feeds' limit), not to
            # ``max_body_bytes``, with or without a Content-Length (see :meth:`_upload`).
            await self._upload(scope, receive, send, form, declared)
            return
        try:
            body, disconnected = await self._read(scope, receive)
            if body and _is_json_request(scope, form):
                self._check_json(body)
        except _Refusal as refusal:
            await self._refuse_recorded(scope, send, form, refusal)
            return
        await self.app(scope, _replay(body, disconnected, receive), send)

    async def _refuse_recorded(self, scope: Scope, send: Send, form: str, refusal: _Refusal) -> None:
        if self.rejections is not None:
            self.rejections.record_rejected(
                surface=_surface_of(form),
                action=_action_of(form, str(scope.get("path", ""))),
                status=refusal.error.http_status,
                error_code=refusal.error.code,
                processed_by=self.settings.instance_name,
            )
        await self._refuse(send, form, refusal)

    def _console_upload(self, scope: Scope) -> bool:
        path = str(scope.get("path", ""))
        prefix = self.settings.console_prefix.rstrip("/") + "/inventory/"
        return path.startswith(prefix) and _CONSOLE_UPLOAD.match(path[len(prefix) :]) is not None

    async def _upload(self, scope: Scope, receive: Receive, send: Send, form: str, declared: str | None) -> None:
        """A console feed upload, refused past ``feed_max_bytes`` with one error however its size is told.

        With a Content-Length within the limit it goes through unbuffered (the server holds the body to it; the
        multipart parser spools the file to disk, surfaces/console/views_ops.py). Without one (chunked), the body
        is first spooled here (to disk past ``max_body_bytes``) and counted: past the limit it is refused before
        the console sees any of it, so no import starts and nothing is half-written; within it, it is replayed.
        """
        limit = self.settings.feed_max_bytes
        too_large = _Refusal(PayloadTooLarge(details={"max_bytes": limit}), -32600)
        if declared is not None:
            if int(declared) > limit:
                await self._refuse_recorded(scope, send, form, too_large)
                return
            await self.app(scope, receive, send)
            return
        spool = tempfile.SpooledTemporaryFile(max_size=self.settings.max_body_bytes)  # noqa: SIM115 (closed below)
        try:
            size, disconnected = 0, False
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    disconnected = True
                    break
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size > limit:
                    await self._refuse_recorded(scope, send, form, too_large)
                    return
                if size > self.settings.max_body_bytes:
                    await asyncio.to_thread(spool.write, chunk)  # on disk by now: off the event loop
                else:
                    spool.write(chunk)
                if not message.get("more_body", False):
                    break
            spool.seek(0)
            await self.app(scope, _replay_file(spool, disconnected, receive), send)
        finally:
            spool.close()

    async def _read(self, scope: Scope, receive: Receive) -> tuple[bytes, bool]:
        limit = self.settings.max_body_bytes
        declared = _header(scope, b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                raise _Refusal(InvalidRequest("Content-Length is not a number."), -32600)
            if int(declared) > limit:
                raise _Refusal(PayloadTooLarge(details={"max_bytes": limit}), -32600)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b"".join(chunks), True
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > limit:
                raise _Refusal(PayloadTooLarge(details={"max_bytes": limit}), -32600)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), False

    def _check_json(self, body: bytes) -> None:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise _Refusal(InvalidRequest("The request body is not valid UTF-8."), -32700) from None
        if not strings_decodable(body):
            message = "The request body has an invalid string escape or a lone surrogate."
            raise _Refusal(InvalidRequest(message), -32700)
        if not json_nesting_within(body, self.settings.max_json_depth):
            depth = self.settings.max_json_depth
            raise _Refusal(InvalidRequest("The JSON nests too deeply.", details={"max_depth": depth}), -32600)

    async def _refuse(self, send: Send, form: str, refusal: _Refusal) -> None:
        exc = refusal.error
        body = error_body(form, exc, self.settings, jsonrpc_code=refusal.jsonrpc_code)
        raw = json.dumps(body, separators=(",", ":")).encode()
        media = "application/json"
        # The connection is closed after a refusal: the unread rest of an oversized body must not be
        # taken for the next request on a keep-alive connection.
        sent = [
            (b"content-type", media.encode()),
            (b"content-length", str(len(raw)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": exc.http_status, "headers": sent})
        await send({"type": "http.response.body", "body": raw})


_REPLAY_CHUNK = 256 * 1024


def _replay_file(spool: IO[bytes], disconnected: bool, receive: Receive) -> Receive:
    """A ``receive`` that hands out a spooled body in chunks, then defers to the server's."""
    done = False

    async def replay() -> Message:
        nonlocal done
        if done:
            return await receive()
        chunk = await asyncio.to_thread(spool.read, _REPLAY_CHUNK)
        if len(chunk) < _REPLAY_CHUNK:
            done = True
            if disconnected and not chunk:
                return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunk, "more_body": not done}

    return replay


def _replay(body: bytes, disconnected: bool, receive: Receive) -> Receive:
    """A ``receive`` that hands out the buffered body once, then defers to the server's."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            if disconnected and not body:
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
