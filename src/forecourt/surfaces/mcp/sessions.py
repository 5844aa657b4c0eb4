"""Legacy (2025-11-25) MCP sessions that any replica can serve.

The SDK keeps a stateful legacy session in the memory of the process that answered ``initialize``; behind a
load balancer that spreads requests, the next request lands on another replica and gets ``404 Session not
found``. Forecourt instead runs the legacy era on the SDK's *stateless* transport (every POST is
self-contained) and adds what a session is still needed for:

- **A session id**, issued on ``initialize``: ``<nonce>.<mac>`` where the MAC (HMAC-SHA256 with
  ``settings.cursor_secret``) binds the nonce to the credential that opened it. Every replica can check it
  without shared state; a forged id, or a real one presented with another credential, is answered ``404``
  exactly as an unknown session is. Replicas must share ``FORECOURT_CURSOR_SECRET``.
- **Subscriptions** (``resources/subscribe``), kept in a :class:`SubscriptionRegistry` keyed by session id —
  Redis when configured, so a subscription made through replica B is seen by the standalone ``GET`` stream
  the client holds open on replica A. That stream follows the change events of every dealership of the
  caller's company (through the event bus, so changes made on any replica arrive) and, for each event,
  asks the registry whether the session watches the resource or its collection.

- **Requests to the client within a call** (an upstream tool's ``sampling/createMessage`` or
  ``elicitation/create``, see ``surfaces/mcp/federation/relay.py``): the stateless transport cannot send them,
  since the client's answer arrives as another POST it cannot route. A :class:`BackChannel` writes the request
  as one more event of the call's own response stream, and the answer — a POST of a JSON-RPC response with
  the same session id, on any replica — is taken out before the SDK sees it and handed to the waiting call by
  a :class:`ReplyRouter` (Redis when configured). The capabilities the client declared in ``initialize``
  (sampling, elicitation) are written into the session id (covered by its MAC), so every replica knows them.

``DELETE`` forgets the session's subscriptions. What a legacy session no longer has: server-to-client
*requests* outside a POST (Forecourt sends none), SSE resumption of the standalone stream, and a per-session
idle timeout or limit (ids are not stored; subscriptions expire ``mcp_session_idle_s`` after their last use).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol

import mcp_types as types
import redis.asyncio as aioredis
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from sse_starlette.sse import EventSourceResponse
from starlette.types import Message, Receive, Scope, Send

from forecourt.domain.events import ChangeEvent
from forecourt.errors import Overloaded
from forecourt.gateway.backends.redis import UNAVAILABLE
from forecourt.settings import Settings
from forecourt.surfaces.mcp.backchannel import (
    BackChannel,
    MemoryReplies,
    RedisReplies,
    ReplyRouter,
    is_reply,
)
from forecourt.surfaces.mcp.caller import Caller
from forecourt.surfaces.mcp.http import CALLER_KEY, _peek, send_json
from forecourt.surfaces.mcp.listchanged import ToolListChanges
from forecourt.surfaces.mcp.resumption import EventLog, RecordedResponse, event_log_for, resume
from forecourt.surfaces.mcp.subscriptions import SubscriptionRelay
from forecourt.surfaces.mcp.uris import event_uris

logger = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
MAX_QUEUED = 256
CAPABILITIES_KEY = "forecourt.mcp.client_capabilities"
"""ASGI scope key: the :class:`mcp_types.ClientCapabilities` a legacy session declared in ``initialize``."""
BACKCHANNEL_KEY = "forecourt.mcp.backchannel"
"""ASGI scope key: the :class:`BackChannel` of a legacy POST whose session may be asked for input."""


class _QuietStatelessTeardown(logging.Filter):
    """Drops the SDK's per-request "Terminating session: None" (every stateless legacy POST logs it at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith("Terminating session: None"))


_SDK_TRANSPORT_LOG = logging.getLogger("mcp.server.streamable_http")
if not any(isinstance(f, _QuietStatelessTeardown) for f in _SDK_TRANSPORT_LOG.filters):
    _SDK_TRANSPORT_LOG.addFilter(_QuietStatelessTeardown())


class SessionIds:
    """Issues and checks self-verifying legacy session ids (see the module docstring)."""

    def __init__(self, secret: str) -> None:
        self._key = hashlib.sha256(b"forecourt-mcp-session|" + secret.encode()).digest()

    def _mac(self, nonce: str, binding: str) -> str:
        digest = hmac.new(self._key, f"{nonce}|{binding}".encode(), hashlib.sha256).digest()[:18]
        return base64.urlsafe_b64encode(digest).decode()

    def issue(self, binding: str, capabilities: str = "") -> str:
        """A new session id bound to ``binding`` (the caller's identity), carrying a :func:`capability_code`."""
        nonce = f"{secrets.token_urlsafe(18)}.{capabilities}"
        return f"{nonce}.{self._mac(nonce, binding)}"

    def valid(self, session_id: str, binding: str) -> bool:
        """Whether ``session_id`` was issued (by any replica sharing the secret) to ``binding``."""
        nonce, dot, mac = session_id.rpartition(".")
        if not dot or len(session_id) > 128:
            return False
        return hmac.compare_digest(mac, self._mac(nonce, binding))


def capability_code(declared: object) -> str:
    """The client capabilities of an ``initialize`` that matter to relaying, as a few letters.

    ``s`` sampling (``t`` with tools, ``c`` with context), ``f`` form and ``u`` URL elicitation (an empty
    ``elicitation`` object means form, as the specification says).
    """
    caps = declared if isinstance(declared, dict) else {}
    code = ""
    sampling = caps.get("sampling")
    if isinstance(sampling, dict):
        code += "s" + ("t" if isinstance(sampling.get("tools"), dict) else "")
        code += "c" if isinstance(sampling.get("context"), dict) else ""
    elicitation = caps.get("elicitation")
    if isinstance(elicitation, dict):
        url = isinstance(elicitation.get("url"), dict)
        code += "f" if isinstance(elicitation.get("form"), dict) or not url else ""
        code += "u" if url else ""
    return code


RESUMABLE_FROM = "2025-11-25"
"""The first protocol version whose clients read a priming event (an SSE event with an id and empty data)."""


def negotiated_code(params: object) -> str:
    """``r`` when the version an ``initialize`` negotiates reads priming events (resumable streams), else ``""``.

    The SDK answers the version the client asked for when it knows it, else its latest handshake version.
    """
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    negotiated = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    return "r" if str(negotiated) >= RESUMABLE_FROM else ""


def resumable(session_id: str) -> bool:
    """Whether a (verified) session id says its client reads priming events: its POST streams are resumable.

    Decided by the version negotiated in ``initialize``, not by a request's ``MCP-Protocol-Version`` header.
    """
    parts = session_id.split(".")
    return len(parts) == 3 and "r" in parts[1]


def session_capabilities(session_id: str) -> types.ClientCapabilities:
    """The capabilities a (verified) session id carries; none for ids without a code."""
    parts = session_id.split(".")
    code = parts[1] if len(parts) == 3 else ""
    sampling = None
    if "s" in code:
        sampling = types.SamplingCapability(
            tools=types.SamplingToolsCapability() if "t" in code else None,
            context=types.SamplingContextCapability() if "c" in code else None,
        )
    elicitation = None
    if "f" in code or "u" in code:
        elicitation = types.ElicitationCapability(
            form=types.FormElicitationCapability() if "f" in code else None,
            url=types.UrlElicitationCapability() if "u" in code else None,
        )
    return types.ClientCapabilities(sampling=sampling, elicitation=elicitation)


class SubscriptionRegistry(Protocol):
    """Which resource URIs each legacy session watches (shared by all replicas when backed by Redis)."""

    async def add(self, session_id: str, uri: str) -> None:
        """Record that ``session_id`` watches ``uri``."""

    async def remove(self, session_id: str, uri: str) -> None:
        """Forget one watched URI."""

    async def clear(self, session_id: str) -> None:
        """Forget every URI of a session."""

    async def watched(self, session_id: str, uris: Sequence[str]) -> set[str]:
        """Those of ``uris`` the session watches."""

    async def touch(self, session_id: str) -> None:
        """Keep the session's subscriptions alive (its stream is still open)."""

    async def close(self) -> None:
        """Release connections."""


class MemoryRegistry:
    """One process: the stream and every request of a session are served here."""

    def __init__(self) -> None:
        self._uris: dict[str, set[str]] = {}

    async def add(self, session_id: str, uri: str) -> None:
        self._uris.setdefault(session_id, set()).add(uri)

    async def remove(self, session_id: str, uri: str) -> None:
        self._uris.get(session_id, set()).discard(uri)

    async def clear(self, session_id: str) -> None:
        self._uris.pop(session_id, None)

    async def watched(self, session_id: str, uris: Sequence[str]) -> set[str]:
        return self._uris.get(session_id, set()).intersection(uris)

    async def touch(self, session_id: str) -> None:
        return None

    async def close(self) -> None:
        self._uris.clear()


class RedisRegistry:
    """A Redis set per session (``<prefix>mcp:legacy:<session id>``) expiring ``ttl_s`` after its last use."""

    def __init__(self, url: str, prefix: str, ttl_s: float) -> None:
        self.client: aioredis.Redis = aioredis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
        self.prefix = prefix
        self._prefix = f"{prefix}mcp:legacy:"
        self._ttl = max(int(ttl_s), 1)

    async def add(self, session_id: str, uri: str) -> None:
        key = self._prefix + session_id
        try:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.sadd(key, uri)
                pipe.expire(key, self._ttl)
                await pipe.execute()
        except UNAVAILABLE:
            raise Overloaded("Subscriptions are unavailable; try again shortly.") from None

    async def remove(self, session_id: str, uri: str) -> None:
        try:
            await self.client.srem(self._prefix + session_id, uri)
        except UNAVAILABLE:
            raise Overloaded("Subscriptions are unavailable; try again shortly.") from None

    async def clear(self, session_id: str) -> None:
        with contextlib.suppress(*UNAVAILABLE):  # expires on its own
            await self.client.delete(self._prefix + session_id)

    async def watched(self, session_id: str, uris: Sequence[str]) -> set[str]:
        if not uris:
            return set()
        flags = await self.client.smismember(self._prefix + session_id, list(uris))
        return {uri for uri, flag in zip(uris, flags, strict=True) if flag}

    async def touch(self, session_id: str) -> None:
        with contextlib.suppress(*UNAVAILABLE):
            await self.client.expire(self._prefix + session_id, self._ttl)

    async def close(self) -> None:
        await self.client.aclose()


def registry_for(settings: Settings) -> SubscriptionRegistry:
    """Redis when ``settings.redis_url`` is set (replicas share it), else this process's memory."""
    if settings.redis_url:
        return RedisRegistry(settings.redis_url, settings.redis_prefix, settings.mcp_session_idle_s)
    return MemoryRegistry()


def replies_for(registry: SubscriptionRegistry) -> ReplyRouter:
    """Through the registry's Redis when it has one (any replica may receive the answer), else in memory."""
    if isinstance(registry, RedisRegistry):
        return RedisReplies(registry.client, registry.prefix)
    return MemoryReplies()


TOOLS_CHANGED = ""
"""Queued on a :class:`LegacyStream` for ``notifications/tools/list_changed`` (a URI is never empty)."""


class LegacyStream:
    """One open standalone ``GET`` stream of a legacy session: receives change events, keeps the watched ones."""

    def __init__(self, session_id: str, registry: SubscriptionRegistry) -> None:
        self.session_id = session_id
        self.registry = registry
        self.queue: asyncio.Queue[str] = asyncio.Queue(MAX_QUEUED)
        self._tools_pending = False

    def tools_changed(self) -> None:
        """Queue ``notifications/tools/list_changed`` (once, however many changes arrive before it is sent)."""
        if not self._tools_pending and not self.queue.full():
            self._tools_pending = True
            self.queue.put_nowait(TOOLS_CHANGED)

    async def offer(self, event: ChangeEvent) -> None:
        """Queue a notification for each URI of ``event`` this session watches (best effort)."""
        uris = list(event_uris(event.dealership_id, event.resource_type, event.resource_id))
        try:
            watched = await self.registry.watched(self.session_id, uris)
        except UNAVAILABLE:
            logger.warning("legacy MCP stream could not read its subscriptions; an update was not sent")
            return
        for uri in uris:
            if uri in watched and not self.queue.full():
                self.queue.put_nowait(uri)

    async def messages(self, keepalive_s: float) -> AsyncIterator[dict[str, str]]:
        """SSE events (``notifications/resources/updated``); refreshes the subscriptions' lifetime meanwhile."""
        while True:
            try:
                uri = await asyncio.wait_for(self.queue.get(), keepalive_s)
            except TimeoutError:
                await self.registry.touch(self.session_id)
                continue
            if uri == TOOLS_CHANGED:
                self._tools_pending = False
                note: dict[str, object] = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            else:
                note = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
            yield {"event": "message", "data": json.dumps(note, separators=(",", ":"))}


def binding_of(scope: Scope) -> str:
    """The identity a session is bound to: the SDK's view of the verified caller, or ``anonymous``."""
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return "anonymous"
    context = authorization_context(user)
    return "|".join(str(context.get(k) or "-") for k in ("client_id", "issuer", "subject"))


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


class LegacySessions:
    """ASGI layer in front of the SDK's (stateless) session manager: ids, the ``GET`` stream, ``DELETE``.

    Args:
        app: The session manager's ``handle_request`` (``stateless=True``).
        settings: ``cursor_secret`` (signs ids), ``mcp_sse_ping_s``, ``mcp_session_idle_s``.
        relay: Follows dealerships' change events on the event bus.
        registry: Where subscriptions live.
        dealerships: The dealerships a stream of ``caller`` follows.
        replies: Where the client's answers to back channel requests go (default: :func:`replies_for`).
        events: Where resumable response streams are recorded (default: the registry's Redis, else memory).
        tool_changes: Tells open streams that their company's tool lists changed (upstream changes).
    """

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        *,
        settings: Settings,
        relay: SubscriptionRelay,
        registry: SubscriptionRegistry,
        dealerships: Callable[[Caller], Awaitable[list[str]]],
        replies: ReplyRouter | None = None,
        events: EventLog | None = None,
        tool_changes: ToolListChanges | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.relay = relay
        self.registry = registry
        self.dealerships = dealerships
        self.ids = SessionIds(settings.cursor_secret.get_secret_value())
        self.replies: ReplyRouter = replies if replies is not None else replies_for(registry)
        client = registry.client if isinstance(registry, RedisRegistry) else None
        prefix = registry.prefix if isinstance(registry, RedisRegistry) else ""
        self.events: EventLog = events if events is not None else event_log_for(client, prefix)
        self.tool_changes = tool_changes
        self.streams = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = _header(scope, b"mcp-protocol-version")
        if scope["type"] != "http" or (version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS):
            await self.app(scope, receive, send)  # the 2026-07-28 era: stateless by design
            return
        session_id = _header(scope, SESSION_HEADER.encode())
        method = scope.get("method")
        if session_id is not None and not self.ids.valid(session_id, binding_of(scope)):
            await _jsonrpc_status(send, 404, "Session not found")
            return
        if method == "GET":
            last_event_id = _header(scope, b"last-event-id")
            if session_id is None:
                await _jsonrpc_status(send, 400, "Bad Request: Missing session ID")
            elif last_event_id is not None:
                if not await resume(
                    scope, receive, send, self.events, session_id, last_event_id, self.settings.mcp_sse_ping_s
                ):
                    await _jsonrpc_status(send, 400, "Bad Request: No stream to resume for that Last-Event-ID")
            else:
                await self._stream(scope, receive, send, session_id)
        elif method == "DELETE" and session_id is not None:
            await self.registry.clear(session_id)
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
        elif method == "POST" and session_id is None:
            await self._maybe_opening(scope, receive, send)
        elif method == "POST" and session_id is not None:
            await self._in_session(scope, receive, send, session_id)
        else:
            await self.app(scope, receive, send)

    async def _in_session(self, scope: Scope, receive: Receive, send: Send, session_id: str) -> None:
        """A POST of a session, its response stream recorded when the session is resumable."""
        if not resumable(session_id):
            await self._in_session_post(scope, receive, send, session_id)
            return
        recorded = RecordedResponse(send, receive, self.events, session_id)
        try:
            await self._in_session_post(scope, recorded.receive, recorded.send, session_id)
        finally:
            recorded.end()

    async def _in_session_post(self, scope: Scope, receive: Receive, send: Send, session_id: str) -> None:
        """A POST of a session: an answer to a back channel request, or a message for the SDK."""
        capabilities = session_capabilities(session_id)
        scope = {**scope, CAPABILITIES_KEY: capabilities}
        if capabilities.sampling is None and capabilities.elicitation is None:
            await self.app(scope, receive, send)  # never asked anything: nothing to answer
            return
        body, receive = await _peek(scope, receive)
        if is_reply(body) and body is not None and await self.replies.deliver(session_id, body):
            await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        channel = BackChannel(send, session_id, self.replies)
        try:
            await self.app({**scope, BACKCHANNEL_KEY: channel}, receive, channel.send)
        finally:
            channel.end()

    async def _maybe_opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A POST without a session: an ``initialize`` is answered with a new session id."""
        body, receive = await _peek(scope, receive)
        if body is None or body.get("method") != "initialize":
            await self.app(scope, receive, send)
            return
        params = body.get("params")
        declared = params.get("capabilities") if isinstance(params, dict) else None
        session_id = self.ids.issue(binding_of(scope), capability_code(declared) + negotiated_code(params))

        async def with_session(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                headers = [*message.get("headers", []), (SESSION_HEADER.encode(), session_id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_session)

    async def _stream(self, scope: Scope, receive: Receive, send: Send, session_id: str) -> None:
        """The standalone stream: resource-updated notifications for this session, from any replica's changes."""
        caller = scope.get(CALLER_KEY)
        followed = await self.dealerships(caller) if isinstance(caller, Caller) else []
        stream = LegacyStream(session_id, self.registry)
        attached: list[str] = []
        company = caller.principal.company_id if isinstance(caller, Caller) and caller.principal else None
        unwatch = self.tool_changes.watch(company, stream.tools_changed) if self.tool_changes and company else None
        self.streams += 1
        try:
            for dealership_id in followed:
                await self.relay.acquire(dealership_id)
                attached.append(dealership_id)
                self.relay.add_stream(dealership_id, stream)
            keepalive = max(min(self.settings.mcp_session_idle_s / 3, 300.0), 1.0)
            response = EventSourceResponse(
                stream.messages(keepalive),
                headers={"Cache-Control": "no-cache", SESSION_HEADER: session_id},
            )
            await response(scope, receive, send)
        finally:
            if unwatch is not None:
                unwatch()
            self.streams -= 1
            for dealership_id in attached:
                self.relay.remove_stream(dealership_id, stream)
                self.relay.release(dealership_id)


async def _jsonrpc_status(send: Send, status: int, message: str) -> None:
    await send_json(send, status, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}})
