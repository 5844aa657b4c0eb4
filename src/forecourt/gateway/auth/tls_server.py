"""Uvicorn HTTP protocols that hand the TLS peer certificate (and the real TCP peer) to the ASGI app.

Uvicorn verifies client certificates when started with ``ssl_ca_certs`` and ``ssl_cert_reqs=2``
(``ssl.CERT_REQUIRED``) but does not put the certificate in the ASGI scope. These subclasses of uvicorn's
own protocols read it from the connection's ``ssl_object`` once per connection (``getpeercert(binary_form=
True)`` is the leaf, already verified by the handshake) and add to every request's scope:

- ``scope["extensions"]["tls"]``: the ASGI TLS extension (``client_cert_chain``: ``[leaf PEM]``,
  ``client_cert_name``, ``client_cert_error``, ``tls_version``, ``server_cert``, ``cipher_suite``);
- ``scope["extensions"]["forecourt.peer"]``: ``{"address": <TCP peer IP>}``, taken before uvicorn's
  proxy-headers middleware can rewrite ``scope["client"]``.

Use them by class (``uvicorn.Config(app, http=TlsHttpToolsProtocol, ...)``) or by name on the command line
(``uvicorn --http forecourt.gateway.auth.tls_server:TlsHttpToolsProtocol --ssl-ca-certs ca.pem
--ssl-cert-reqs 2 ...``). :func:`tls_protocol_class` picks httptools when installed, else h11. WebSocket
upgrades are served by uvicorn's WebSocket protocols and do not get the extension.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from cryptography import x509
from uvicorn._types import ASGI3Application, ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.utils import get_remote_addr

from forecourt.gateway.auth.asgi import PEER_EXTENSION, TLS_EXTENSION

_TLS_VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


def tls_extension(transport: asyncio.BaseTransport) -> dict[str, Any] | None:
    """The ASGI TLS extension for a connection, or ``None`` when it is not TLS.

    ``client_cert_chain`` is filled only when the server asked for and verified a client certificate
    (``verify_mode`` is not ``CERT_NONE``), so its presence always means "verified by this server".
    """
    ssl_object = transport.get_extra_info("ssl_object")
    if not isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
        return None
    chain: list[str] = []
    name: str | None = None
    if ssl_object.context.verify_mode != ssl.CERT_NONE:
        der = ssl_object.getpeercert(binary_form=True)
        if der:
            chain.append(ssl.DER_cert_to_PEM_cert(der))
            name = x509.load_der_x509_certificate(der).subject.rfc4514_string()
    return {
        "server_cert": None,
        "client_cert_chain": chain,
        "client_cert_name": name,
        "client_cert_error": None,
        "tls_version": _TLS_VERSIONS.get(ssl_object.version() or ""),
        "cipher_suite": None,
    }


def _with_extensions(app: ASGI3Application, extensions: dict[str, Any]) -> ASGI3Application:
    async def app_with_connection_info(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] in ("http", "websocket"):
            merged = dict(scope.get("extensions") or {})
            merged.update(extensions)
            scope["extensions"] = merged
        await app(scope, receive, send)

    return app_with_connection_info


def _connection_extensions(transport: asyncio.BaseTransport) -> dict[str, Any]:
    extensions: dict[str, Any] = {}
    tls = tls_extension(transport)
    if tls is not None:
        extensions[TLS_EXTENSION] = tls
    remote = get_remote_addr(transport)  # type: ignore[arg-type]
    if remote is not None:
        extensions[PEER_EXTENSION] = {"address": remote[0]}
    return extensions


class TlsH11Protocol(H11Protocol):
    """Uvicorn's h11 protocol, adding the TLS and peer extensions to each request's scope."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Record the connection's peer certificate and address, then continue as uvicorn does."""
        super().connection_made(transport)
        self.app = _with_extensions(self.app, _connection_extensions(transport))


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is part of uvicorn[standard]
    TlsHttpToolsProtocol: type[asyncio.Protocol] = TlsH11Protocol
else:

    class TlsHttpToolsProtocol(HttpToolsProtocol):  # type: ignore[no-redef]
        """Uvicorn's httptools protocol, adding the TLS and peer extensions to each request's scope."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            """Record the connection's peer certificate and address, then continue as uvicorn does."""
            super().connection_made(transport)
            self.app = _with_extensions(self.app, _connection_extensions(transport))


def tls_protocol_class() -> type[asyncio.Protocol]:
    """The protocol class to pass as ``uvicorn.Config(http=...)``: httptools when installed, else h11."""
    return TlsHttpToolsProtocol
