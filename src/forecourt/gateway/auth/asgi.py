"""Reading :class:`~forecourt.gateway.base.Credentials` off an ASGI request.

Surfaces call :func:`credentials_from_scope` with the ASGI scope (``request.scope`` in Starlette). It reads:

- ``Authorization: Bearer <api key or JWT>``;
- the client certificate verified by this server's TLS handshake, from the ASGI TLS extension
  ``scope["extensions"]["tls"]["client_cert_chain"][0]`` (PEM). Uvicorn does not fill that extension itself,
  so Forecourt serves with its own HTTP protocol classes (:mod:`forecourt.gateway.auth.tls_server`), which
  read the peer certificate off the connection's ``ssl_object`` and add the extension to every request;
- ``X-Forwarded-Client-Cert`` (raw header value; the mTLS authenticator decides whether the peer is a
  trusted proxy and otherwise ignores it);
- the peer address: the TCP peer recorded by those protocol classes in ``scope["extensions"]["forecourt.peer"]``
  when present (uvicorn's proxy-headers middleware may have rewritten ``scope["client"]`` from
  ``X-Forwarded-For``, which must not decide whether a proxy is trusted), else ``scope["client"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.gateway.base import Credentials

TLS_EXTENSION = "tls"
PEER_EXTENSION = "forecourt.peer"
FORWARDED_CERT_HEADER = "x-forwarded-client-cert"
MAX_HEADER_CHARS = 32_768


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value, else ``None``."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_HEADER_CHARS:
        return None
    return token


def client_cert_from_scope(scope: Mapping[str, Any]) -> str | None:
    """The PEM of the client certificate this server's TLS layer verified, or ``None``.

    Reads the ASGI TLS extension (``client_cert_chain``, leaf first); it is present when the server runs
    with Forecourt's protocol classes, or any ASGI server that implements the extension.
    """
    extensions = scope.get("extensions") or {}
    tls = extensions.get(TLS_EXTENSION)
    if not isinstance(tls, Mapping) or tls.get("client_cert_error"):
        return None
    chain = tls.get("client_cert_chain") or ()
    if isinstance(chain, list | tuple) and chain and isinstance(chain[0], str):
        return chain[0]
    return None


def peer_address_from_scope(scope: Mapping[str, Any]) -> str | None:
    """The IP address of the TCP peer (the proxy, when there is one), or ``None``."""
    extensions = scope.get("extensions") or {}
    peer = extensions.get(PEER_EXTENSION)
    if isinstance(peer, Mapping) and isinstance(peer.get("address"), str):
        return str(peer["address"])
    client = scope.get("client")
    if isinstance(client, list | tuple) and client and isinstance(client[0], str):
        return client[0]
    return None


def client_address_from_scope(scope: Mapping[str, Any]) -> str | None:
    """The client's IP address: ``scope["client"]``, which uvicorn rewrites from ``X-Forwarded-For`` only when
    the TCP peer is one of ``FORECOURT_TRUSTED_PROXIES`` (``forecourt serve`` passes them as
    ``forwarded_allow_ips``); the load balancer's own address otherwise."""
    client = scope.get("client")
    if isinstance(client, list | tuple) and client and isinstance(client[0], str):
        return client[0]
    return None


def credentials_from_scope(
    scope: Mapping[str, Any], *, forwarded_cert_header: str = FORWARDED_CERT_HEADER
) -> Credentials:
    """Everything the request presented, unverified, for :meth:`Gateway.invoke`.

    Args:
        scope: The ASGI ``http`` or ``websocket`` scope.
        forwarded_cert_header: The header a trusted proxy puts the client certificate in.

    Returns:
        The credentials.
    """
    cert_header = forwarded_cert_header.lower().encode("latin-1")
    found: dict[bytes, str] = {}
    for key, value in scope.get("headers") or ():  # one pass; the first of a repeated header counts
        name = key.lower()
        if name in (b"authorization", cert_header, b"x-forwarded-for") and name not in found:
            found[name] = value.decode("latin-1")
    forwarded = found.get(cert_header)
    if forwarded is not None and len(forwarded) > MAX_HEADER_CHARS:
        forwarded = None
    return Credentials(
        bearer=bearer_token(found.get(b"authorization")),
        client_cert_pem=client_cert_from_scope(scope),
        forwarded_cert=forwarded or None,
        peer_address=peer_address_from_scope(scope),
        client_address=client_address_from_scope(scope),
        forwarded_for=(found.get(b"x-forwarded-for") or "")[:MAX_HEADER_CHARS] or None,
    )


def has_credentials(credentials: Credentials) -> bool:
    """Whether the caller presented anything at all (else the gateway may treat it as anonymous)."""
    return bool(credentials.bearer or credentials.client_cert_pem or credentials.forwarded_cert)
