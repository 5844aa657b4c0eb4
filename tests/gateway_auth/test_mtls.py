"""mTLS: certificates verified by this server's TLS (real uvicorn) or forwarded by a trusted proxy."""

from __future__ import annotations

import asyncio
import socket
import ssl
import urllib.parse
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from forecourt.domain.tenancy import SecurityType
from forecourt.errors import ForecourtError
from forecourt.gateway.auth.asgi import credentials_from_scope
from forecourt.gateway.auth.mtls import (
    MtlsAuthenticator,
    certificate_fingerprint,
    normalize_fingerprint,
    parse_forwarded_cert,
)
from forecourt.gateway.auth.tls_server import TlsH11Protocol, TlsHttpToolsProtocol
from forecourt.gateway.base import Credentials

from . import pki
from .fakes import MemoryStore, member

PROXY = "10.0.0.7"


@pytest.fixture(scope="module")
def ca() -> pki.Issued:
    return pki.make_ca("Forecourt Agents CA")


@pytest.fixture(scope="module")
def rogue_ca() -> pki.Issued:
    return pki.make_ca("Somebody Else CA")


@pytest.fixture(scope="module")
def client(ca: pki.Issued) -> pki.Issued:
    return pki.make_leaf(ca, "bdc-agent")


@pytest.fixture
def store(client: pki.Issued) -> MemoryStore:
    s = MemoryStore()
    s.tenancy.members[("acme", "bdc-agent")] = member(
        "bdc-agent", security_type=SecurityType.MTLS, cert_fingerprint=certificate_fingerprint(client.cert_pem)
    )
    return s


def escaped(pem: str) -> str:
    """What nginx puts in $ssl_client_escaped_cert."""
    return urllib.parse.quote(pem, safe="")


async def refusal(auth: MtlsAuthenticator, credentials: Credentials) -> str:
    with pytest.raises(ForecourtError) as info:
        await auth.authenticate(credentials, None)
    return info.value.code


async def test_a_certificate_verified_by_this_server_authenticates_its_member(store, client):
    principal = await MtlsAuthenticator(store).authenticate(Credentials(client_cert_pem=client.cert_pem), None)
    assert principal is not None
    assert (principal.method, principal.company_id, principal.member_id) == ("mtls", "acme", "bdc-agent")
    assert principal.scopes == frozenset({"amcp:inventory:read", "amcp:leads:write"})
    assert principal.subject is not None
    assert "CN=bdc-agent" in principal.subject


async def test_a_certificate_forwarded_by_a_trusted_proxy_authenticates_its_member(store, client):
    auth = MtlsAuthenticator(store, trusted_proxies=["10.0.0.0/24"])
    credentials = Credentials(forwarded_cert=escaped(client.cert_pem), peer_address=PROXY)
    principal = await auth.authenticate(credentials, None)
    assert principal is not None
    assert principal.member_id == "bdc-agent"


async def test_a_forwarded_certificate_from_an_untrusted_peer_is_ignored(store, client):
    auth = MtlsAuthenticator(store, trusted_proxies=["10.0.0.0/24"])
    credentials = Credentials(forwarded_cert=escaped(client.cert_pem), peer_address="198.51.100.9")
    assert await auth.authenticate(credentials, None) is None


async def test_a_forwarded_certificate_is_ignored_when_no_proxy_is_trusted(store, client):
    credentials = Credentials(forwarded_cert=escaped(client.cert_pem), peer_address="127.0.0.1")
    assert await MtlsAuthenticator(store).authenticate(credentials, None) is None


async def test_a_forwarded_certificate_from_another_ca_fails_the_trust_anchor_check(store, ca, rogue_ca):
    impostor = pki.make_leaf(rogue_ca, "bdc-agent")
    store.tenancy.members[("acme", "impostor")] = member(
        "impostor", cert_fingerprint=certificate_fingerprint(impostor.cert)
    )
    auth = MtlsAuthenticator(store, trusted_proxies=[PROXY], forwarded_trust_anchors_pem=ca.cert_pem)
    credentials = Credentials(forwarded_cert=escaped(impostor.cert_pem), peer_address=PROXY)
    assert await refusal(auth, credentials) == "auth.unauthorized"


async def test_a_forwarded_certificate_chaining_to_the_trust_anchor_passes(store, ca, client):
    auth = MtlsAuthenticator(store, trusted_proxies=[PROXY], forwarded_trust_anchors_pem=ca.cert_pem)
    credentials = Credentials(forwarded_cert=escaped(client.cert_pem), peer_address=PROXY)
    assert await auth.authenticate(credentials, None) is not None


async def test_an_unregistered_certificate_is_unauthorized(store, ca):
    stranger = pki.make_leaf(ca, "stranger")
    assert await refusal(MtlsAuthenticator(store), Credentials(client_cert_pem=stranger.cert_pem)) == (
        "auth.unauthorized"
    )


async def test_an_expired_certificate_is_auth_expired(store, ca):
    now = datetime.now(UTC)
    old = pki.make_leaf(ca, "old-agent", not_before=now - timedelta(days=30), not_after=now - timedelta(days=1))
    store.tenancy.members[("acme", "old-agent")] = member(
        "old-agent", cert_fingerprint=certificate_fingerprint(old.cert)
    )
    assert await refusal(MtlsAuthenticator(store), Credentials(client_cert_pem=old.cert_pem)) == "auth.expired"


async def test_a_member_declared_for_api_keys_cannot_use_a_certificate(store, ca):
    leaf = pki.make_leaf(ca, "keys-agent")
    store.tenancy.members[("acme", "keys-agent")] = member(
        "keys-agent", security_type=SecurityType.API_KEY, cert_fingerprint=certificate_fingerprint(leaf.cert)
    )
    assert await refusal(MtlsAuthenticator(store), Credentials(client_cert_pem=leaf.cert_pem)) == "auth.unauthorized"


async def test_the_subject_cn_must_match_the_member_when_required(store, ca):
    leaf = pki.make_leaf(ca, "wrong-name")
    store.tenancy.members[("acme", "svc")] = member("svc", cert_fingerprint=certificate_fingerprint(leaf.cert))
    auth = MtlsAuthenticator(store, require_cn_match=True)
    assert await refusal(auth, Credentials(client_cert_pem=leaf.cert_pem)) == "auth.unauthorized"


async def test_garbage_in_the_forwarded_header_from_a_trusted_proxy_is_unauthorized(store):
    auth = MtlsAuthenticator(store, trusted_proxies=[PROXY])
    credentials = Credentials(
        forwarded_cert=escaped("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----"), peer_address=PROXY
    )
    assert await refusal(auth, credentials) == "auth.unauthorized"


def test_fingerprints_are_compared_in_one_canonical_form(client):
    fingerprint = certificate_fingerprint(client.cert)
    colon_form = "SHA256:" + ":".join(fingerprint[i : i + 2].upper() for i in range(0, 64, 2))
    assert normalize_fingerprint(colon_form) == fingerprint
    assert len(fingerprint) == 64


def test_envoy_style_forwarded_headers_are_understood(client):
    header = f'By=spiffe://proxy;Hash=abc;Cert="{escaped(client.cert_pem)}";Subject="CN=bdc-agent"'
    assert parse_forwarded_cert(header) == client.cert_pem


# --- the real thing: uvicorn terminating TLS and requiring a client certificate ---------------------------------


async def echo_credentials(scope: dict[str, Any], receive: Any, send: Any) -> None:
    credentials = credentials_from_scope(scope)
    body = (credentials.client_cert_pem or "").encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"x-peer", (credentials.peer_address or "").encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory, ca: pki.Issued) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tls")
    server = pki.make_leaf(ca, "localhost", server=True)
    files = {"ca": ca.cert_pem, "server_cert": server.cert_pem, "server_key": server.key_pem}
    paths = {}
    for name, text in files.items():
        paths[name] = root / f"{name}.pem"
        paths[name].write_text(text)
    return paths


@pytest.fixture(params=[TlsH11Protocol, TlsHttpToolsProtocol], ids=["h11", "httptools"])
async def tls_server(request: pytest.FixtureRequest, tls_files: dict[str, Path]) -> AsyncIterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        echo_credentials,
        http=request.param,
        lifespan="off",
        log_level="warning",
        ssl_certfile=str(tls_files["server_cert"]),
        ssl_keyfile=str(tls_files["server_key"]),
        ssl_ca_certs=str(tls_files["ca"]),
        ssl_cert_reqs=ssl.CERT_REQUIRED,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"https://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)
        sock.close()


def client_context(tls_files: dict[str, Path], identity: pki.Issued | None, tmp_path: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(tls_files["ca"]))
    if identity is not None:
        cert, key = tmp_path / "client.pem", tmp_path / "client.key"
        cert.write_text(identity.cert_pem)
        key.write_text(identity.key_pem)
        context.load_cert_chain(str(cert), str(key))
    return context


async def test_uvicorn_hands_the_verified_client_certificate_to_the_app(tls_server, tls_files, client, tmp_path, store):
    async with httpx.AsyncClient(verify=client_context(tls_files, client, tmp_path)) as http:
        response = await http.get(tls_server)
    assert response.status_code == 200
    assert certificate_fingerprint(response.text) == certificate_fingerprint(client.cert)
    assert response.headers["x-peer"] == "127.0.0.1"
    principal = await MtlsAuthenticator(store).authenticate(Credentials(client_cert_pem=response.text), None)
    assert principal is not None
    assert principal.member_id == "bdc-agent"


async def test_uvicorn_refuses_a_client_certificate_from_another_ca(tls_server, tls_files, rogue_ca, tmp_path):
    outsider = pki.make_leaf(rogue_ca, "bdc-agent")
    async with httpx.AsyncClient(verify=client_context(tls_files, outsider, tmp_path)) as http:
        with pytest.raises(httpx.TransportError):
            await http.get(tls_server)


async def test_uvicorn_refuses_a_client_without_a_certificate(tls_server, tls_files, tmp_path):
    async with httpx.AsyncClient(verify=client_context(tls_files, None, tmp_path)) as http:
        with pytest.raises(httpx.TransportError):
            await http.get(tls_server)
