"""SSRF guard: refuse outbound URLs that point at this host, a private network or anything not plain http(s).

Every URL Forecourt fetches on behalf of configuration that a tenant can influence (JWKS URLs, webhook and
CRM targets, upstream MCP servers) passes :func:`check_url` (or :func:`check_url_async` inside the event
loop) first. The host is resolved and *every* address it resolves to must be public; IP literals in any
spelling the C resolver accepts (``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``[::ffff:127.0.0.1]``) are
normalised by the resolver before the check, so the tricks end up as the addresses they really are.

What this does not stop on its own: DNS rebinding between the check and the connection. Callers that need
that guarantee connect to the checked address (see :func:`resolve_public`) rather than re-resolving.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from forecourt.domain.addresses import IPAddress, is_public_address
from forecourt.errors import UnsafeTarget

logger = logging.getLogger(__name__)

_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}

UNRESOLVED = "unresolved"
"""``UnsafeTarget.details['reason']`` when the host name does not resolve (now: it may later)."""


def _host_allowed(host: str, allowed_hosts: Iterable[str]) -> bool:
    for pattern in allowed_hosts:
        pat = pattern.lower().rstrip(".")
        if pat.startswith("*."):
            if host.endswith(pat[1:]) and host != pat[2:]:
                return True
        elif host == pat:
            return True
    return False


def _split(url: str) -> tuple[str, str, int]:
    """Scheme, lower-cased host and port of a URL, or :class:`UnsafeTarget` when it is not plain http(s)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeTarget("The target URL is malformed.") from exc
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise UnsafeTarget("Only http and https targets are allowed.", details={"scheme": scheme})
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise UnsafeTarget("The target URL has no host.")
    if parts.username is not None or parts.password is not None:
        raise UnsafeTarget("Credentials in the target URL are not allowed.")
    return scheme, host, port or _DEFAULT_PORTS[scheme]


def _judge(host: str, infos: Sequence[tuple[object, ...]]) -> list[IPAddress]:
    addresses: list[IPAddress] = []
    for info in infos:
        sockaddr = info[4]
        if not isinstance(sockaddr, tuple) or not sockaddr:
            continue
        raw = str(sockaddr[0]).split("%", 1)[0]
        addresses.append(ipaddress.ip_address(raw))
    if not addresses:
        raise UnsafeTarget("The target host does not resolve.")
    for address in addresses:
        if not is_public_address(address):
            logger.info("refused outbound target %s: resolves to non-public address %s", host, address)
            raise UnsafeTarget("The target host resolves to a non-public address.")
    return addresses


def check_url(url: str, *, allow_private: bool, allowed_hosts: Iterable[str] = ()) -> None:
    """Refuse a URL that is not http(s) or whose host resolves to a non-public address.

    Args:
        url: The URL about to be fetched.
        allow_private: Skip the address check (``settings.allow_private_targets``, for development and
            tests); the scheme is still checked.
        allowed_hosts: Host names the operator trusts even on a private network (exact, or ``*.example.com``
            for subdomains); they skip the address check.

    Raises:
        UnsafeTarget: The scheme is not http(s), the URL is malformed, the host does not resolve, or any
            address it resolves to is private, loopback, link-local, multicast, reserved or unspecified.
    """
    _scheme, host, port = _split(url)
    if allow_private or _host_allowed(host, allowed_hosts):
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnsafeTarget("The target host does not resolve.", details={"reason": UNRESOLVED}) from exc
    _judge(host, infos)


async def resolve_public(url: str, *, allow_private: bool, allowed_hosts: Iterable[str] = ()) -> list[IPAddress]:
    """Check a URL like :func:`check_url`, resolving through the running event loop.

    Args:
        url: The URL about to be fetched.
        allow_private: Skip the address check; the scheme is still checked.
        allowed_hosts: Host names that skip the address check.

    Returns:
        The public addresses the host resolves to (empty when the address check was skipped).

    Raises:
        UnsafeTarget: As for :func:`check_url`.
    """
    _scheme, host, port = _split(url)
    if allow_private or _host_allowed(host, allowed_hosts):
        return []
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnsafeTarget("The target host does not resolve.", details={"reason": UNRESOLVED}) from exc
    return _judge(host, infos)


async def check_url_async(url: str, *, allow_private: bool, allowed_hosts: Iterable[str] = ()) -> None:
    """Async :func:`check_url`: resolves with the event loop's ``getaddrinfo`` so it never blocks the loop.

    Args:
        url: The URL about to be fetched.
        allow_private: Skip the address check; the scheme is still checked.
        allowed_hosts: Host names that skip the address check.

    Raises:
        UnsafeTarget: As for :func:`check_url`.
    """
    await resolve_public(url, allow_private=allow_private, allowed_hosts=allowed_hosts)
