"""The HTTP edge of the MCP endpoint: Host/Origin protection, bearer authentication, OAuth challenges.

Every request to ``/mcp`` passes :class:`McpHttpGuard` before the SDK's session manager sees it:

1. ``Host`` (and ``Origin``, when a browser sends one) must match ``settings.allowed_hosts`` (glob patterns
   such as ``mcp.example.com`` or ``*.dealers.example.com``; a port in the header is ignored). With the default
   ``["*"]`` and a loopback bind address only loopback names and the host of ``settings.public_base_url`` are
   accepted (DNS-rebinding protection for local use); ``["*"]`` with a public bind address accepts any host.
   A mismatch is answered ``421``.
2. A bearer token (API key or JWT) or client certificate is verified by the gateway's authenticators. A
   failure is answered ``401`` with ``WWW-Authenticate: Bearer error="invalid_token", scope=...,
   resource_metadata=...`` *and* a JSON-RPC error body whose ``error.data`` is the AutomotiveMCP error
   (``{"code": "auth.expired" | "auth.unauthorized", ...}``), so an MCP host can both refresh its token and
   tell an expired token from a wrong one.
3. Without any credential, only what a public dealer agent allows goes through: the handshake, discovery,
   ``tools/list`` and ``tools/call`` of an anonymous-allowed tool (the AAP skills). Anything else gets the
   ``401`` challenge (without an ``error`` attribute, as RFC 6750 asks when nothing was presented).

The verified caller is put in the ASGI scope for the MCP handlers, and also as the SDK's authenticated user
so that a legacy session can only be used with the credential that opened it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from forecourt.errors import ForecourtError, InternalError, Unauthorized
from forecourt.gateway.auth.asgi import credentials_from_scope, has_credentials
from forecourt.gateway.base import Credentials, Invocation, Principal
from forecourt.gateway.pipeline import Gateway
from forecourt.settings import Settings
from forecourt.surfaces.mcp.caller import Caller
from forecourt.surfaces.mcp.sanitize import value_free_errors

logger = logging.getLogger(__name__)

CALLER_KEY = "forecourt.mcp.caller"
COMPANY_KEY = "forecourt.mcp.company"
"""ASGI scope key: the company whose own protected resource (``/companies/{id}/mcp``) was addressed."""
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"


def resource_path(company_id: str | None) -> str:
    """The MCP endpoint path of the shared resource (``None``) or of one company's own resource."""
    return f"/companies/{company_id}/mcp" if company_id else "/mcp"


def metadata_path(company_id: str | None) -> str:
    """Where the RFC 9728 document of that resource is served."""
    return "/.well-known/oauth-protected-resource" + resource_path(company_id)


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
ANONYMOUS_METHODS = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "notifications/cancelled",
        "ping",
        "server/discover",
        "tools/list",
    }
)
_MAX_PEEK = 1_048_576


def access_token_for(principal: Principal, credentials: Credentials) -> AccessToken:
    """The SDK's view of a principal (it binds legacy sessions to ``client_id``/``subject``)."""
    return AccessToken(
        token=credentials.bearer or "client-certificate",
        client_id=f"{principal.company_id or '-'}/{principal.member_id or principal.subject or '-'}",
        scopes=sorted(principal.scopes),
        expires_at=int(principal.expires_at.timestamp()) if principal.expires_at else None,
        subject=principal.subject or principal.member_id,
    )


async def sdk_view(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app`` with the SDK's view of the verified caller: ``scope["user"]``/``["auth"]`` and its context."""
    caller = scope.get(CALLER_KEY)
    if "user" in scope or not isinstance(caller, Caller) or caller.principal is None:
        await app(scope, receive, send)
        return
    principal = caller.principal
    user = AuthenticatedUser(access_token_for(principal, caller.credentials))
    token = auth_context_var.set(user)
    try:
        await app({**scope, "user": user, "auth": AuthCredentials(sorted(principal.scopes))}, receive, send)
    finally:
        auth_context_var.reset(token)


class SdkView:
    """ASGI layer in front of the SDK: gives it its view of the caller where the guard left that for later."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await sdk_view(self.app, scope, receive, send)


def _names(scope: Scope) -> str | None:
    """The ``names`` query parameter of the endpoint URL, when one is given."""
    raw = scope.get("query_string") or b""
    if b"names=" not in raw:
        return None
    values = parse_qs(raw.decode("latin-1")).get("names")
    return values[-1] if values else None


def host_patterns(settings: Settings) -> list[str] | None:
    """The Host patterns accepted, or ``None`` for any host."""
    configured = [h.strip().lower() for h in settings.allowed_hosts if h.strip()]
    if "*" not in configured:
        return configured
    if settings.host not in LOOPBACK:
        return None
    public = (urlsplit(settings.advertised_url).hostname or "").lower()
    return sorted(LOOPBACK | ({public} if public else set()))


def _host_only(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def host_allowed(patterns: list[str] | None, host: str | None) -> bool:
    """Whether a ``Host`` header value matches one of ``patterns`` (port ignored)."""
    if patterns is None:
        return True
    if not host:
        return False
    name = _host_only(host)
    return any(fnmatchcase(name, p) or fnmatchcase(name, _host_only(p)) for p in patterns)


def origin_allowed(patterns: list[str] | None, origin: str | None) -> bool:
    """Whether an ``Origin`` header (absent for non-browser clients) names an allowed host."""
    if not origin or patterns is None:
        return True
    parts = urlsplit(origin)
    return bool(parts.netloc) and host_allowed(patterns, parts.netloc)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


async def send_json(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    """Send a complete JSON response."""
    payload = json.dumps(body, separators=(",", ":")).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw.extend((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items())
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


def jsonrpc_error(request_id: Any, exc: ForecourtError) -> dict[str, Any]:
    """A JSON-RPC error response carrying the AutomotiveMCP error in ``error.data``."""
    data = exc.to_dict()
    if exc.trace_id:
        data["trace_id"] = exc.trace_id
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": exc.jsonrpc_code, "message": exc.message, "data": data},
    }


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


class McpHttpGuard:
    """ASGI wrapper for the MCP endpoint (see the module docstring).

    Args:
        app: The SDK session manager's ``handle_request``.
        gateway: Authenticates callers.
        settings: ``allowed_hosts``, ``public_base_url``, ``host``, ``max_body_bytes``.
        scope_for: The scope a request needs, from its JSON-RPC method and tool name (for challenges).
        anonymous_tool: Whether a tool may be called without credentials.
        ready: Set once the session manager runs; requests wait for it briefly.
    """

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        *,
        gateway: Gateway,
        settings: Settings,
        scope_for: Callable[[str | None, str | None], str],
        anonymous_tool: Callable[[str], bool],
        ready: asyncio.Event,
    ) -> None:
        self.app = app
        self.gateway = gateway
        self.settings = settings
        self.scope_for = scope_for
        self.anonymous_tool = anonymous_tool
        self.ready = ready
        self.patterns = host_patterns(settings)
        self.base = settings.advertised_url
        self.metadata_url = f"{self.base}{PRM_PATH}"
        self.surface: Any = None
        self.direct: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = value_free_errors(send)
        if not host_allowed(self.patterns, _header(scope, b"host")) or not origin_allowed(
            self.patterns, _header(scope, b"origin")
        ):
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Host or Origin not allowed."}}
            await send_json(send, 421, error)
            return
        if not self.ready.is_set():
            try:
                await asyncio.wait_for(self.ready.wait(), 10.0)
            except TimeoutError:
                await send_json(send, 503, jsonrpc_error(None, InternalError()))
                return
        credentials = credentials_from_scope(scope)
        if has_credentials(credentials):
            await self._authenticated(scope, receive, send, credentials)
        elif self.settings.mcp_anonymous_member:
            # FORECOURT_MCP_ANONYMOUS_MEMBER: conformance runs and local development only (off by default).
            await self._authenticated(scope, receive, send, credentials, self.settings.mcp_anonymous_member)
        else:
            await self._anonymous(scope, receive, send, credentials)

    async def _authenticated(
        self, scope: Scope, receive: Receive, send: Send, credentials: Credentials, as_member: str | None = None
    ) -> None:
        try:
            if as_member is not None:
                from forecourt.gateway.auth.devmode import configured_member

                principal = await configured_member(self.gateway.store, as_member)
            else:
                principal = await self.gateway.principal_for(
                    Invocation(action="", payload={}, credentials=credentials, surface="mcp")
                )
            company = scope.get(COMPANY_KEY)
            if company is not None and principal.company_id != company:
                # Another company's credential at this company's own resource: sign in where this one says.
                raise Unauthorized("The credential is not for this company's MCP server.")
        except ForecourtError as exc:
            body, receive = await _peek(scope, receive)
            await self._challenge(send, exc, body, scope=scope)
            return
        except Exception:  # top of the surface: nothing internal reaches the client
            logger.exception("authentication failed unexpectedly on the MCP surface")
            await send_json(send, 500, jsonrpc_error(None, InternalError()))
            return
        caller = Caller(principal, credentials, "mcp", _header(scope, b"mcp-session-id"), _names(scope))
        if _header(scope, b"mcp-protocol-version") in MODERN_PROTOCOL_VERSIONS:
            # Stateless: nothing before the SDK needs its view of the caller, so it is made only for a request
            # that reaches the SDK (SdkView); the direct path answers most of them without it.
            await self.app({**scope, CALLER_KEY: caller}, receive, send)
            return
        await sdk_view(self.app, {**scope, CALLER_KEY: caller}, receive, send)

    async def _anonymous(self, scope: Scope, receive: Receive, send: Send, credentials: Credentials) -> None:
        body: dict[str, Any] | None = None
        if scope.get("method") == "POST":
            body, receive = await _peek(scope, receive)
            if not self._anonymous_allowed(body):
                await self._challenge(send, Unauthorized(), body, presented=False, scope=scope)
                return
        caller = Caller(None, credentials, "mcp", _header(scope, b"mcp-session-id"), _names(scope))
        await self.app({**scope, CALLER_KEY: caller}, receive, send)

    def _anonymous_allowed(self, body: dict[str, Any] | None) -> bool:
        if body is None:
            return False
        method = body.get("method")
        if method in ANONYMOUS_METHODS:
            return True
        if method == "tools/call":
            params = body.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            return isinstance(name, str) and self.anonymous_tool(name)
        return False

    async def _challenge(
        self,
        send: Send,
        exc: ForecourtError,
        body: dict[str, Any] | None,
        *,
        presented: bool = True,
        scope: Scope | None = None,
    ) -> None:
        request_id = body.get("id") if body else None
        if exc.http_status != 401:
            await send_json(send, exc.http_status, jsonrpc_error(request_id, exc), dict(exc.headers))
            return
        method, tool = _method_and_tool(body)
        needed = self.scope_for(method, tool)
        parts = ['Bearer realm="forecourt"']
        if presented:
            parts.append('error="invalid_token"')
            parts.append(f'error_description="{_quoted(exc.message)}"')
        if needed:
            parts.append(f'scope="{_quoted(needed)}"')
        company = scope.get(COMPANY_KEY) if scope is not None else None
        metadata = f"{self.base}{metadata_path(company)}" if company else self.metadata_url
        parts.append(f'resource_metadata="{metadata}"')
        await send_json(send, 401, jsonrpc_error(request_id, exc), {"WWW-Authenticate": ", ".join(parts)})


def _method_and_tool(body: dict[str, Any] | None) -> tuple[str | None, str | None]:
    if not body:
        return None, None
    method = body.get("method") if isinstance(body.get("method"), str) else None
    params = body.get("params")
    tool = params.get("name") if method == "tools/call" and isinstance(params, dict) else None
    return method, tool if isinstance(tool, str) else None


async def _peek(scope: Scope, receive: Receive) -> tuple[dict[str, Any] | None, Receive]:
    """Read the (bounded) request body and return it parsed, plus a ``receive`` that replays it."""
    if scope.get("method") != "POST":
        return None, receive
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        chunks.append(chunk)  # replayed even past the limit: the body must reach the app whole
        size += len(chunk)
        more = bool(message.get("more_body"))
        if size > _MAX_PEEK:
            break
    raw = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": more}
        return await receive()

    if more:  # too large to inspect
        return None, replay
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = None
    return (parsed if isinstance(parsed, dict) else None), replay


def protected_resource_metadata(
    settings: Settings, scopes: list[str], authorization_servers: list[str], company_id: str | None = None
) -> dict[str, Any]:
    """The RFC 9728 document for the shared MCP endpoint, or for one company's own (``company_id``)."""
    base = settings.advertised_url
    doc: dict[str, Any] = {
        "resource": f"{base}{resource_path(company_id)}",
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": f"Forecourt AutomotiveMCP server of {company_id}"
        if company_id
        else "Forecourt AutomotiveMCP server",
        "resource_documentation": f"{base}/.well-known/automotive-mcp.json",
    }
    if authorization_servers:
        doc["authorization_servers"] = authorization_servers
    return doc
