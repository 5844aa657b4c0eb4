"""One pooled MCP client session per upstream server: opened once, reused by every call, reopened after it dies.

Each :class:`UpstreamSession` owns a background task that holds the SDK ``Client`` open (its transport, its
task group and, for stdio, the child process). Calls from any request borrow that client. When the upstream
goes away, the call in flight fails as ``upstream.unavailable`` (retryable), the session is torn down, and the
next call after a short backoff (0.25 s doubling to 5 s) opens a new one; the hub's sync loop also retries, so
the tool list comes back on its own once the upstream does.

The session declares sampling and elicitation and takes log messages; what the upstream asks during a call
is relayed to that call's caller only (see relay.py).

HTTP upstreams: the URL passes the SSRF guard before every connect (private, loopback and link-local targets
are refused unless ``settings.allow_private_targets``), redirects are not followed, and a credential from the
gateway's credential broker is attached to every request (so rotated secrets apply without reconnecting).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import httpx2
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from forecourt.adapters.errors import UpstreamProtocolError
from forecourt.adapters.upstream.relay import SAMPLING, detached, on_elicitation, on_log, on_sampling
from forecourt.contract import IssuedCredential
from forecourt.domain.upstreams import Registered
from forecourt.errors import ForecourtError, UpstreamUnavailable
from forecourt.netguard import check_url_async
from forecourt.outbound_urls import guarded_transport2
from forecourt.settings import Settings

logger = logging.getLogger(__name__)
T = TypeVar("T")
P = TypeVar("P", bound=types.PaginatedResult)


async def _paged(list_page: Callable[..., Awaitable[P]], items: Callable[[P], Sequence[T]]) -> list[T]:
    """Every item of a paginated listing, following ``next_cursor`` for at most ``MAX_PAGES`` pages."""
    found: list[T] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await list_page(cursor=cursor)
        found.extend(items(page))
        cursor = page.next_cursor
        if not cursor:
            break
    return found


CONNECT_TIMEOUT_S = 15.0
MIN_BACKOFF_S = 0.25
MAX_BACKOFF_S = 5.0
CREDENTIAL_TTL_S = 60.0
MAX_PAGES = 50
EventSink = Callable[[str, str, Any], None]
"""``(upstream key, kind, value)``: ``tools`` / ``resources`` / ``prompts`` changed, or ``resource_updated`` (uri)."""


class _BrokerAuth(httpx2.Auth):
    """Attaches a credential issued by the gateway's broker to every request of the pooled session."""

    def __init__(self, issue: Callable[[], Awaitable[IssuedCredential | None]]) -> None:
        self._issue = issue

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        credential = await self._issue()
        if credential is not None:
            for name, value in credential.headers.items():
                request.headers[name] = value
        yield request


def _closed(exc: MCPError) -> bool:
    return exc.code == types.CONNECTION_CLOSED and "closed" in exc.message.lower()


def _forgotten(exc: MCPError) -> bool:
    """The upstream answered ``404``: it no longer knows the session (restarted, or expired it)."""
    message = exc.message.lower()
    return "session not found" in message or "session terminated" in message


class UpstreamSession:
    """The one client session to one upstream (see the module docstring).

    Args:
        registered: The stored definition.
        settings: ``allow_private_targets`` for the SSRF guard.
        credentials: The gateway's credential broker (``None``: no credentials are sent).
        operator_credentials: The operator's default ``credentials`` section for the ``upstream`` adapter.
        on_event: Told about list changes and resource updates the upstream announces.
    """

    def __init__(
        self,
        registered: Registered,
        *,
        settings: Settings,
        credentials: Any = None,
        operator_credentials: Mapping[str, Any] | None = None,
        on_event: EventSink | None = None,
    ) -> None:
        self.registered = registered
        self.spec = registered.spec
        self.key = registered.key
        self.settings = settings
        self._broker = credentials
        self._operator_credentials = dict(operator_credentials or {})
        self._on_event = on_event
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._backoff = 0.0
        self._retry_at = 0.0
        self._credential: tuple[float, IssuedCredential | None] | None = None
        self.last_error: str | None = None
        self.sessions_opened = 0
        self.tools: list[types.Tool] = []
        self.resources: list[types.Resource] = []
        self.resource_templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []

    # ------------------------------------------------------------------ state

    @property
    def connected(self) -> bool:
        """Whether a session is open right now."""
        return self._client is not None and self._task is not None and not self._task.done()

    @property
    def protocol_version(self) -> str | None:
        """The protocol version the open session negotiated (``None`` while not connected)."""
        client = self._client
        return client.protocol_version if client is not None and self.connected else None

    def retry_due(self) -> bool:
        """Whether a (re)connect may be attempted now."""
        return time.monotonic() >= self._retry_at

    def _unavailable(self) -> UpstreamUnavailable:
        wait = max(self._retry_at - time.monotonic(), 0.0)
        return UpstreamUnavailable(details={"upstream": self.spec.id, "retry_after": round(wait, 2)})

    def _failed(self, exc: BaseException) -> None:
        self.last_error = exc.code if isinstance(exc, ForecourtError) else type(exc).__name__
        self._backoff = min(max(self._backoff * 2, MIN_BACKOFF_S), MAX_BACKOFF_S)
        self._retry_at = time.monotonic() + self._backoff
        logger.warning("upstream %s unavailable (%s); retry in %.2fs", self.key, self.last_error, self._backoff)
        self._teardown()

    def _teardown(self) -> None:
        self._client = None
        if self._stop is not None:
            self._stop.set()
        self._stop = None

    # ------------------------------------------------------------------ credentials

    async def _issue(self) -> IssuedCredential | None:
        if self._broker is None or not self.spec.credentials:
            return None
        now = time.monotonic()
        if self._credential is not None and self._credential[0] > now:
            return self._credential[1]
        broker = self._broker
        if self.registered.operator_managed:
            issued: IssuedCredential = await broker.issue_with_override(
                "upstream", self.registered.company_id, self.spec.credentials, None
            )
        else:
            # A company admin's section is an override of the operator's: secret locators are dropped unless
            # the operator allows company secret sources (see gateway/credentials/broker.py).
            issued = await broker.issue_with_override(
                "upstream", self.registered.company_id, self._operator_credentials or None, self.spec.credentials
            )
        ttl = CREDENTIAL_TTL_S
        if issued.expires_at is not None:
            from datetime import UTC, datetime

            ttl = min(ttl, max((issued.expires_at - datetime.now(UTC)).total_seconds() - 30.0, 0.0))
        self._credential = (now + ttl, issued)
        return issued

    # ------------------------------------------------------------------ connect

    def http_client(self) -> httpx2.AsyncClient:
        """The HTTP client of a Streamable HTTP upstream: the broker's credential, no redirects, and every
        connection checked again when made (resolved once, connected to the checked address)."""
        return httpx2.AsyncClient(
            auth=_BrokerAuth(self._issue),
            timeout=httpx2.Timeout(30.0, read=300.0),
            follow_redirects=False,
            transport=guarded_transport2(allow_private=self.settings.allow_private_targets),
        )

    def _transport(self, stack: AsyncExitStack) -> Any:
        spec = self.spec
        if spec.transport == "stdio":
            assert spec.command is not None
            return StdioServerParameters(command=spec.command, args=list(spec.args), env=dict(spec.env) or None)
        assert spec.url is not None
        http = self.http_client()
        stack.push_async_callback(http.aclose)
        return streamable_http_client(spec.url, http_client=http)

    async def _message(self, message: Any) -> None:
        sink = self._on_event
        if sink is None:
            return
        if isinstance(message, types.ToolListChangedNotification):
            sink(self.key, "tools", None)
        elif isinstance(message, types.ResourceListChangedNotification):
            sink(self.key, "resources", None)
        elif isinstance(message, types.PromptListChangedNotification):
            sink(self.key, "prompts", None)
        elif isinstance(message, types.ResourceUpdatedNotification):
            sink(self.key, "resource_updated", str(message.params.uri))

    async def _run(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = Client(
                    self._transport(stack),
                    mode=self.spec.mode,
                    message_handler=self._message,
                    # Relayed to the caller of the call they belong to (relay.py); refused outside any call.
                    sampling_callback=on_sampling,
                    sampling_capabilities=SAMPLING,
                    elicitation_callback=on_elicitation,
                    logging_callback=on_log,
                    cache=None,
                    client_info=types.Implementation(name="forecourt-gateway", version="1"),
                )
                await stack.enter_async_context(client)
                ready.set_result(client)
                await stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except Exception as exc:  # the session's own task: whatever ended it is reported to the caller
            if not ready.done():
                ready.set_exception(exc)
            else:
                logger.info("upstream %s session ended: %s", self.key, type(exc).__name__)
        finally:
            if self._stop is stop:
                self._client = None

    async def _open(self) -> Client:
        if self.spec.transport == "http":
            assert self.spec.url is not None
            await check_url_async(self.spec.url, allow_private=self.settings.allow_private_targets)
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Client] = loop.create_future()
        stop = asyncio.Event()
        self._stop = stop
        # Detached: the session must not inherit the relay of the call that happens to open it.
        task = asyncio.create_task(self._run(ready, stop), name=f"upstream-session:{self.key}", context=detached())
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                client = await ready
        except BaseException:
            stop.set()
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise
        self._task = task
        self._client = client
        self.sessions_opened += 1
        return client

    async def client(self) -> Client:
        """The open session's client, connecting first if needed.

        Raises:
            UpstreamUnavailable: The upstream cannot be reached (or is in its retry backoff).
            UnsafeTarget: The URL points at a non-public address and private targets are not allowed.
        """
        if self.connected:
            assert self._client is not None
            return self._client
        async with self._lock:
            if self.connected:
                assert self._client is not None
                return self._client
            if not self.retry_due():
                raise self._unavailable()
            try:
                client = await self._open()
            except ForecourtError as exc:
                self._failed(exc)
                raise
            except Exception as exc:
                self._failed(exc)
                raise self._unavailable() from exc
            self._backoff = 0.0
            self.last_error = None
            return client

    async def call(self, fn: Callable[[Client], Awaitable[T]], *, again: bool = True) -> T:
        """Run ``fn`` with the pooled client; connection failures become ``upstream.unavailable``.

        A request the upstream refused because it no longer knows the session was not run: the session is
        reopened and ``fn`` runs once more.

        Raises:
            UpstreamUnavailable: The session died (it is reopened by a later call).
            UpstreamProtocolError: The upstream answered with a JSON-RPC error.
        """
        client = await self.client()
        try:
            return await fn(client)
        except MCPError as exc:
            if again and _forgotten(exc):
                if self._client is client:  # not yet reopened by a concurrent call
                    logger.info("upstream %s no longer knows its session; reopening", self.key)
                    self._teardown()
                return await self.call(fn, again=False)
            if _closed(exc):
                self._failed(exc)
                raise self._unavailable() from exc
            raise UpstreamProtocolError(
                exc.message[:200] or None, details={"upstream": self.spec.id, "upstream_code": exc.code}
            ) from exc
        except (ForecourtError, asyncio.CancelledError, TimeoutError):
            raise
        except Exception as exc:
            self._failed(exc)
            raise self._unavailable() from exc

    # ------------------------------------------------------------------ listings

    async def refresh(self) -> None:
        """Fetch the upstream's tools (and resources, templates and prompts when it offers them)."""
        self.tools = await self.call(self._all_tools)
        caps = (await self.client()).server_capabilities
        self.resources = await self._optional(self._all_resources) if caps.resources else []
        self.resource_templates = await self._optional(self._all_templates) if caps.resources else []
        self.prompts = await self._optional(self._all_prompts) if caps.prompts else []

    async def _optional(self, fetch: Callable[[Client], Awaitable[list[T]]]) -> list[T]:
        # An upstream may advertise resources without templates (or answer a listing with an error): that
        # must not cost the caller its tools.
        try:
            return await self.call(fetch)
        except UpstreamProtocolError:
            return []

    @staticmethod
    async def _all_tools(client: Client) -> list[types.Tool]:
        return await _paged(client.list_tools, lambda page: page.tools)

    @staticmethod
    async def _all_resources(client: Client) -> list[types.Resource]:
        return await _paged(client.list_resources, lambda page: page.resources)

    @staticmethod
    async def _all_templates(client: Client) -> list[types.ResourceTemplate]:
        page = await client.list_resource_templates()
        return list(page.resource_templates)

    @staticmethod
    async def _all_prompts(client: Client) -> list[types.Prompt]:
        return await _paged(client.list_prompts, lambda page: page.prompts)

    async def close(self) -> None:
        """Close the session (and stop a stdio child)."""
        task = self._task
        self._teardown()
        self._task = None
        if task is not None:
            with contextlib.suppress(BaseException):
                async with asyncio.timeout(5.0):
                    await task
            if not task.done():
                task.cancel()
