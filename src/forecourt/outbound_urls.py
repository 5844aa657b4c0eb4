"""One type for every configured URL the server will fetch, and one transport that connects only where it checked.

:data:`OutboundUrl` is the pydantic type of every schema field that holds a URL Forecourt fetches (OIDC
issuers and JWKS, CRM endpoints, model ``base_url`` overrides, upstream MCP servers, webhooks). When a
record is *saved*, its model is validated with :func:`save_context` and each such field must be a plain
``http(s)`` URL without credentials whose host is not ``localhost``-like and, for an address literal in
any spelling (``2130706433``, ``0x7f.1``, ``[::ffff:127.0.0.1]``), is a public address; after that,
:func:`check_saved_urls` resolves host names once and refuses any that lead to a private, loopback or
link-local address. ``settings.allow_private_targets`` turns the address checks off (development); the
scheme and credential checks always hold. Records read back from the store are not re-validated (the
connect-time check covers data saved before these rules).

At *connect* time DNS may have changed. :func:`guarded_transport` is an ``httpx`` transport whose every
TCP connection resolves the host once, checks every address, and connects to the checked address (TLS
still verifies the certificate against the host name), so a name that rebinds to ``169.254.169.254``
between the check and the connection is still refused. :mod:`forecourt.outbound_aiohttp` does the same for
``aiohttp`` sessions (tritonclient's).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel

from forecourt.domain.urls import OutboundUrl, save_context, url_problem
from forecourt.errors import InvalidParams, UnsafeTarget
from forecourt.netguard import UNRESOLVED, resolve_public

if TYPE_CHECKING:  # the HTTP clients are imported by the code that makes a transport, not with every URL type
    import httpx
    import httpx2

__all__ = [
    "OutboundUrl",
    "add_trace_context",
    "check_saved_urls",
    "guarded_transport",
    "guarded_transport2",
    "save_context",
    "url_fields",
    "url_problem",
]
# Keys of free-form configuration (adapter settings) that hold a URL the server fetches.
_URL_KEYS = frozenset({"url", "base_url", "endpoint", "issuer", "jwks_url", "token_url", "webhook"})


def url_fields(config: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(json-pointer, url)`` of every URL-valued key in free-form configuration, at any depth."""
    if isinstance(config, Mapping):
        for key, value in config.items():
            here = f"{path}/{key}"
            name = str(key).lower()
            if isinstance(value, str) and (name in _URL_KEYS or name.endswith(("_url", "_endpoint"))):
                yield here, value
            else:
                yield from url_fields(value, here)
    elif isinstance(config, list):
        for index, item in enumerate(config):
            yield from url_fields(item, f"{path}/{index}")


def _is_outbound(annotation: Any) -> bool:
    if annotation == OutboundUrl:
        return True
    return any(_is_outbound(arg) for arg in get_args(annotation) if arg is not type(None))


def record_urls(record: BaseModel) -> list[tuple[str, str | None]]:
    """``(json-pointer, url)`` of every :data:`OutboundUrl` field of a record (a company, a dealership, ...)."""
    fields = type(record).model_fields
    return [(f"/{name}", getattr(record, name)) for name, field in fields.items() if _is_outbound(field.annotation)]


async def refuse_unsafe_records(records: Iterable[BaseModel], *, allow_private: bool) -> None:
    """Refuse to save records whose fetch-target URLs are not allowed: the one check of every save path.

    Raises:
        InvalidParams: ``details.errors`` lists ``{path, rule: unsafe_url, reason}`` (at most five).
    """
    urls = [(pointer, url) for record in records for pointer, url in record_urls(record)]
    problems = await check_saved_urls(urls, allow_private=allow_private)
    if problems:
        raise InvalidParams("A URL in the record is not an allowed fetch target.", details={"errors": problems[:5]})


async def check_saved_urls(urls: Iterable[tuple[str, str | None]], *, allow_private: bool) -> list[dict[str, str]]:
    """The problems (``{path, rule, reason}``) of URLs about to be saved, resolving host names once."""
    problems: list[dict[str, str]] = []
    for path, url in urls:
        if not url:
            continue
        problem = url_problem(url, allow_private=allow_private)
        if problem is None and not allow_private:
            try:
                await resolve_public(url, allow_private=False)
            except UnsafeTarget as exc:
                # A name that resolves to no address yet is saved: every connection resolves and checks it again.
                if exc.details.get("reason") != UNRESOLVED:
                    problem = "non_public_address"
        if problem is not None:
            problems.append({"path": path, "rule": "unsafe_url", "reason": problem})
    return problems


class _GuardedBackend:
    """Resolves each host once, refuses non-public addresses, and connects to the address it checked.

    Wraps the network backend of ``httpcore`` (``httpx``) or of ``httpcore2`` (``httpx2``, the MCP SDK's client):
    both call the same three methods (an ``AsyncNetworkBackend`` by its methods; its base class is not needed).
    """

    def __init__(self, inner: Any, *, allow_private: bool, allowed_hosts: Iterable[str]):
        self._inner = inner
        self._allow_private = allow_private
        self._allowed_hosts = tuple(allowed_hosts)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        target = host
        url = f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
        addresses = await resolve_public(url, allow_private=self._allow_private, allowed_hosts=self._allowed_hosts)
        if addresses:
            target = str(addresses[0])
        return await self._inner.connect_tcp(
            target, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        raise UnsafeTarget("Unix sockets are not fetch targets.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def add_trace_context(headers: Any) -> None:
    """Put the current W3C trace context (``traceparent``, ``tracestate``) on an outbound request's ``headers``.

    The receiving service (another Forecourt's gateway agent, an MCP server, a CRM) then continues the caller's trace:
    seed 001 §9's Agent A → A2A → Agent B → MCP is one trace. A request that already carries a ``traceparent`` keeps
    it; outside any span nothing is added. Trace ids are random and carry nothing of the call.
    """
    if "traceparent" in headers:
        return
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    TraceContextTextMapPropagator().inject(headers)


def guarded_transport(
    *, allow_private: bool, allowed_hosts: Iterable[str] = (), **kwargs: Any
) -> httpx.AsyncHTTPTransport:
    """An ``httpx`` transport that checks every connection's resolved address and connects to exactly it, and
    sends the current trace context (:func:`add_trace_context`) with every request."""
    import httpx

    class _Traced(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            add_trace_context(request.headers)
            return await super().handle_async_request(request)

    transport = _Traced(**kwargs)
    pool: Any = transport._pool
    pool._network_backend = _GuardedBackend(
        pool._network_backend,
        allow_private=allow_private,
        allowed_hosts=allowed_hosts,
    )
    return transport


def guarded_transport2(
    *, allow_private: bool, allowed_hosts: Iterable[str] = (), **kwargs: Any
) -> httpx2.AsyncHTTPTransport:
    """:func:`guarded_transport` for ``httpx2`` (the client the MCP SDK's Streamable HTTP transport takes)."""
    import httpx2

    transport = httpx2.AsyncHTTPTransport(**kwargs)
    pool: Any = transport._pool
    pool._network_backend = _GuardedBackend(
        pool._network_backend,
        allow_private=allow_private,
        allowed_hosts=allowed_hosts,
    )
    return transport
