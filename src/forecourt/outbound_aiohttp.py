"""The ``aiohttp`` counterpart of :func:`forecourt.outbound_urls.guarded_transport` (tritonclient runs on aiohttp).

An ``aiohttp`` connector resolves a host name through its resolver and connects to the addresses it gets back.
:class:`GuardedResolver` resolves each name once, refuses it when any address is private, loopback, link-local or
otherwise non-public (:func:`~forecourt.netguard.resolve_public`), and hands back exactly the addresses it checked,
so a name that rebinds between an earlier check and the connection is still refused (TLS still verifies the
certificate against the name). The DNS cache is off: every new connection is checked when it is made.

Address literals never reach a resolver (the connector connects to them as written), so the session's
middleware checks the literal host of every request it sends, redirects included. Both raise
:class:`~forecourt.errors.UnsafeTarget`, which aiohttp lets through unwrapped.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from forecourt.netguard import resolve_public

__all__ = ["GuardedResolver", "guarded_session"]

_NUMERIC = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


def _probe_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def _skips_resolver(host: str) -> bool:
    """Whether aiohttp's connector takes ``host`` for an address and connects without resolving it (its own test)."""
    return ":" in host or host.replace(".", "").isdigit()


class GuardedResolver(AbstractResolver):
    """Resolves each host once, refuses non-public addresses, and returns only the addresses it checked."""

    def __init__(self, *, allow_private: bool, allowed_hosts: Iterable[str] = ()) -> None:
        self._allow_private = allow_private
        self._allowed_hosts = tuple(allowed_hosts)
        self._plain: ThreadedResolver | None = None

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The checked addresses of ``host``.

        Raises:
            UnsafeTarget: The host does not resolve, or resolves to any non-public address.
        """
        url = _probe_url(host, port)
        addresses = await resolve_public(url, allow_private=self._allow_private, allowed_hosts=self._allowed_hosts)
        if not addresses:  # the address check is off for this host: resolve it as aiohttp would
            if self._plain is None:  # aiohttp's resolver without aiodns; it holds nothing that needs closing
                self._plain = ThreadedResolver()
            return await self._plain.resolve(host, port, family)
        results: list[ResolveResult] = []
        for address in addresses:
            kind = socket.AF_INET6 if address.version == 6 else socket.AF_INET
            if family in (socket.AF_UNSPEC, kind):
                results.append(
                    {
                        "hostname": host,
                        "host": str(address),
                        "port": port,
                        "family": kind,
                        "proto": 0,
                        "flags": _NUMERIC,
                    }
                )
        if not results:
            raise OSError(f"{host} has no address of the requested family")
        return results

    async def close(self) -> None:
        """Nothing to release."""


def _add_trace_context(headers: Any) -> None:
    """The current W3C trace context on an outbound request, as ``outbound_urls.add_trace_context`` does for httpx."""
    if "traceparent" in headers:
        return
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    TraceContextTextMapPropagator().inject(headers)


def _literal_guard(allow_private: bool, allowed_hosts: tuple[str, ...]) -> aiohttp.ClientMiddlewareType:
    async def check(request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        host = request.url.raw_host or ""
        if _skips_resolver(host):
            url = _probe_url(host, request.url.port or 0)
            await resolve_public(url, allow_private=allow_private, allowed_hosts=allowed_hosts)
        _add_trace_context(request.headers)
        return await handler(request)

    return check


def guarded_session(
    *, allow_private: bool, allowed_hosts: Iterable[str] = (), limit: int = 100, **kwargs: Any
) -> aiohttp.ClientSession:
    """An ``aiohttp`` session whose every connection goes only to an address checked when it is made, and whose every
    request carries the current W3C trace context (``traceparent``).

    Args:
        allow_private: Skip the address checks (``settings.allow_private_targets``); hosts still resolve once.
        allowed_hosts: Host names the operator trusts even on a private network.
        limit: The connector's limit on simultaneous connections.
        **kwargs: Passed to :class:`aiohttp.ClientSession` (``timeout``, ``auto_decompress``, ...).

    Returns:
        The session; it owns its connector (closing the session closes it).
    """
    hosts = tuple(allowed_hosts)
    resolver = GuardedResolver(allow_private=allow_private, allowed_hosts=hosts)
    connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False, limit=limit)
    return aiohttp.ClientSession(connector=connector, middlewares=(_literal_guard(allow_private, hosts),), **kwargs)
