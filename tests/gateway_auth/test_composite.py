"""The composite authenticator and reading credentials off an ASGI request."""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from typing import Any

import jwt
import pytest

from forecourt.domain.tenancy import Company, SecurityType
from forecourt.errors import ForecourtError
from forecourt.gateway.auth import (
    ApiKeyAuthenticator,
    ApiKeyService,
    CompositeAuthenticator,
    JwksCache,
    MtlsAuthenticator,
    OidcAuthenticator,
    certificate_fingerprint,
    credentials_from_scope,
    has_credentials,
)
from forecourt.gateway.base import Credentials

from . import pki
from .fakes import MemoryStore, SharedRevocations, member
from .servers import LoopbackServer, serve

PEPPER = "composite-pepper-0123456789"
PROXY = "192.0.2.10"


@pytest.fixture(scope="module")
def ca() -> pki.Issued:
    return pki.make_ca()


@pytest.fixture(scope="module")
def signing_key() -> Any:
    return pki.rsa_key()


@pytest.fixture
def jwks_server(signing_key: Any) -> Iterator[LoopbackServer]:
    with serve(lambda method, path, body: (200, {"keys": [pki.public_jwk(signing_key, "k1")]})) as s:
        yield s


@pytest.fixture
def store(jwks_server: LoopbackServer, ca: pki.Issued) -> MemoryStore:
    s = MemoryStore()
    s.tenancy.companies["acme"] = Company(
        id="acme",
        profile_id="p1",
        name="Acme",
        oidc_issuer="https://id.acme.test",
        oidc_audience="fc",
        oidc_jwks_url=f"{jwks_server.base_url}/jwks",
    )
    s.tenancy.members[("acme", "any")] = member("any", oidc_subject="sub-any")
    s.tenancy.members[("acme", "tls-only")] = member("tls-only", security_type=SecurityType.MTLS)
    return s


@pytest.fixture
async def composite(store: MemoryStore) -> AsyncIterator[CompositeAuthenticator]:
    revocations = SharedRevocations()
    jwks = JwksCache(allow_private=True)
    yield CompositeAuthenticator(
        api_keys=ApiKeyAuthenticator(store, PEPPER, revocations),
        oidc=OidcAuthenticator(store, jwks),
        mtls=MtlsAuthenticator(store, trusted_proxies=[PROXY]),
    )
    await jwks.aclose()


def id_token(key: Any, sub: str) -> str:
    now = int(time.time())
    claims = {"iss": "https://id.acme.test", "aud": "fc", "sub": sub, "iat": now, "exp": now + 60}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})


def register_cert(store: MemoryStore, ca: pki.Issued, member_id: str) -> pki.Issued:
    leaf = pki.make_leaf(ca, member_id)
    old = store.tenancy.members[("acme", member_id)]
    store.tenancy.members[("acme", member_id)] = old.model_copy(
        update={"cert_fingerprint": certificate_fingerprint(leaf.cert)}
    )
    return leaf


async def refusal(composite: CompositeAuthenticator, credentials: Credentials) -> str:
    with pytest.raises(ForecourtError) as info:
        await composite.authenticate(credentials, None)
    return info.value.code


async def test_an_api_key_bearer_is_verified_as_an_api_key(composite, store):
    issued = await ApiKeyService(store, PEPPER, SharedRevocations()).create("acme", "any")
    principal = await composite.authenticate(Credentials(bearer=issued.key), None)
    assert principal.method == "api_key"


async def test_a_jwt_bearer_is_verified_as_an_oidc_token(composite, signing_key):
    principal = await composite.authenticate(Credentials(bearer=id_token(signing_key, "sub-any")), None)
    assert (principal.method, principal.member_id) == ("oidc", "any")


async def test_a_client_certificate_authenticates_when_there_is_no_bearer(composite, store, ca):
    leaf = register_cert(store, ca, "tls-only")
    principal = await composite.authenticate(Credentials(client_cert_pem=leaf.cert_pem), None)
    assert (principal.method, principal.member_id) == ("mtls", "tls-only")


async def test_nothing_presented_is_unauthorized(composite):
    assert await refusal(composite, Credentials(peer_address="203.0.113.1")) == "auth.unauthorized"


async def test_a_forwarded_certificate_from_an_untrusted_address_is_unauthorized(composite, store, ca):
    leaf = register_cert(store, ca, "tls-only")
    header = urllib.parse.quote(leaf.cert_pem, safe="")
    assert await refusal(composite, Credentials(forwarded_cert=header, peer_address="203.0.113.1")) == (
        "auth.unauthorized"
    )
    principal = await composite.authenticate(Credentials(forwarded_cert=header, peer_address=PROXY), None)
    assert principal.member_id == "tls-only"


async def test_a_bad_bearer_is_not_rescued_by_a_valid_certificate(composite, store, ca):
    leaf = register_cert(store, ca, "tls-only")
    credentials = Credentials(bearer="fck_0000000000_" + "a" * 40, client_cert_pem=leaf.cert_pem)
    assert await refusal(composite, credentials) == "auth.unauthorized"


async def test_an_opaque_bearer_that_is_neither_key_nor_jwt_is_unauthorized(composite):
    assert await refusal(composite, Credentials(bearer="opaque-token")) == "auth.unauthorized"


async def test_a_member_declared_mtls_cannot_use_an_api_key_or_a_jwt(composite, store, signing_key):
    issued = await ApiKeyService(store, PEPPER, SharedRevocations()).create("acme", "tls-only")
    assert await refusal(composite, Credentials(bearer=issued.key)) == "auth.unauthorized"
    store.tenancy.members[("acme", "tls-only")] = store.tenancy.members[("acme", "tls-only")].model_copy(
        update={"oidc_subject": "sub-tls"}
    )
    assert await refusal(composite, Credentials(bearer=id_token(signing_key, "sub-tls"))) == "auth.unauthorized"


async def test_an_authenticator_left_out_refuses_its_kind_of_credential(store, signing_key):
    only_keys = CompositeAuthenticator(api_keys=ApiKeyAuthenticator(store, PEPPER, SharedRevocations()))
    assert await refusal(only_keys, Credentials(bearer=id_token(signing_key, "sub-any"))) == "auth.unauthorized"


def test_credentials_are_read_from_an_asgi_scope_with_the_tls_and_peer_extensions():
    scope = {
        "type": "http",
        "client": ("198.51.100.20", 5555),  # rewritten from X-Forwarded-For by uvicorn's proxy headers
        "headers": [(b"authorization", b"Bearer fck_abc"), (b"x-forwarded-client-cert", b"%2D%2D%2D")],
        "extensions": {
            "tls": {"client_cert_chain": ["-----BEGIN CERTIFICATE-----\n..."], "client_cert_error": None},
            "forecourt.peer": {"address": "10.0.0.7"},
        },
    }
    credentials = credentials_from_scope(scope)
    assert credentials.bearer == "fck_abc"
    assert credentials.client_cert_pem == "-----BEGIN CERTIFICATE-----\n..."
    assert credentials.forwarded_cert == "%2D%2D%2D"
    assert credentials.peer_address == "10.0.0.7"
    assert has_credentials(credentials)


def test_a_plain_scope_gives_the_client_address_and_no_certificate():
    credentials = credentials_from_scope(
        {"type": "http", "client": ("127.0.0.1", 1), "headers": [(b"authorization", b"Basic dXNlcjpwdw==")]}
    )
    assert credentials == Credentials(peer_address="127.0.0.1", client_address="127.0.0.1")
    assert not has_credentials(credentials)
