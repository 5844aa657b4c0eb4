"""OIDC JWTs verified against a JWKS served by a real loopback HTTP server."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import jwt
import pytest

from forecourt.domain.tenancy import AdapterSetting, Company, SecurityType
from forecourt.errors import ForecourtError
from forecourt.gateway.auth.jwt import FIREBASE_JWKS_URL, JwksCache, OidcAuthenticator, firebase_issuer
from forecourt.gateway.base import Credentials

from . import pki
from .fakes import ManualClock, MemoryStore, member
from .servers import LoopbackServer, serve

ISSUER = "https://login.acme.test"
AUDIENCE = "forecourt-acme"


class Jwks:
    """The key set the loopback server publishes; tests rotate it."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {}

    def publish(self, kid: str, key: Any) -> None:
        self.keys[kid] = key

    def handler(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        return 200, {"keys": [pki.public_jwk(k, kid) for kid, k in self.keys.items()]}


@pytest.fixture
def jwks() -> Jwks:
    return Jwks()


@pytest.fixture
def server(jwks: Jwks) -> Iterator[LoopbackServer]:
    with serve(jwks.handler) as s:
        yield s


@pytest.fixture
def store(server: LoopbackServer) -> MemoryStore:
    s = MemoryStore()
    s.tenancy.companies["acme"] = Company(
        id="acme",
        profile_id="p1",
        name="Acme",
        oidc_issuer=ISSUER,
        oidc_audience=AUDIENCE,
        oidc_jwks_url=f"{server.base_url}/jwks.json",
    )
    s.tenancy.companies["other"] = Company(id="other", profile_id="p1", name="Other")
    s.tenancy.members[("acme", "crm")] = member("crm", oidc_subject="user-123")
    s.tenancy.members[("acme", "keys-only")] = member(
        "keys-only", oidc_subject="user-456", security_type=SecurityType.API_KEY
    )
    return s


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def cache(clock: ManualClock) -> AsyncIterator[JwksCache]:
    c = JwksCache(allow_private=True, clock=clock, min_refetch_s=30.0)
    yield c
    await c.aclose()


def token(key: Any, kid: str, *, alg: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    body: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": "user-123", "iat": now, "exp": now + 300}
    body.update(claims)
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=alg, headers={"kid": kid})


async def refusal(auth: OidcAuthenticator, bearer: str) -> str:
    with pytest.raises(ForecourtError) as info:
        await auth.authenticate(Credentials(bearer=bearer), None)
    return info.value.code


async def test_a_valid_rs256_token_authenticates_the_member_named_by_sub(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    auth = OidcAuthenticator(store, cache)
    principal = await auth.authenticate(Credentials(bearer=token(key, "k1", scope="amcp:inventory:read other")), None)
    assert principal is not None
    assert (principal.method, principal.company_id, principal.member_id) == ("oidc", "acme", "crm")
    assert principal.scopes == frozenset({"amcp:inventory:read"})
    assert principal.dealership_ids == frozenset({"d1", "d2"})
    assert principal.subject == "user-123"
    assert principal.expires_at is not None


async def test_an_es256_token_with_an_scp_list_is_accepted(store, cache, jwks):
    key = pki.ec_key()
    jwks.publish("ec1", key)
    bearer = token(key, "ec1", alg="ES256", scp=["amcp:leads:write"])
    principal = await OidcAuthenticator(store, cache).authenticate(Credentials(bearer=bearer), None)
    assert principal is not None
    assert principal.scopes == frozenset({"amcp:leads:write"})


async def test_a_token_without_a_scope_claim_gets_the_members_scopes(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    principal = await OidcAuthenticator(store, cache).authenticate(Credentials(bearer=token(key, "k1")), None)
    assert principal is not None
    assert principal.scopes == frozenset({"amcp:inventory:read", "amcp:leads:write"})


async def test_an_expired_token_is_auth_expired(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    past = int(time.time()) - 3600
    assert await refusal(OidcAuthenticator(store, cache), token(key, "k1", iat=past - 300, exp=past)) == "auth.expired"


async def test_a_token_for_another_audience_is_unauthorized(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    assert await refusal(OidcAuthenticator(store, cache), token(key, "k1", aud="someone-else")) == "auth.unauthorized"


async def test_a_token_from_an_unknown_issuer_is_unauthorized_without_fetching_keys(store, cache, jwks, server):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    bearer = token(key, "k1", iss="https://evil.test")
    assert await refusal(OidcAuthenticator(store, cache), bearer) == "auth.unauthorized"
    assert server.requests == []


async def test_a_token_with_a_tampered_payload_is_unauthorized(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    original = token(key, "k1", scope="amcp:inventory:read")
    header, _payload, signature = original.split(".")
    claims = jwt.decode(original, options={"verify_signature": False})
    claims["scope"] = "amcp:inventory:read amcp:leads:write"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert await refusal(OidcAuthenticator(store, cache), f"{header}.{forged}.{signature}") == "auth.unauthorized"


async def test_a_token_signed_by_another_key_under_a_known_kid_is_unauthorized(store, cache, jwks):
    jwks.publish("k1", pki.rsa_key())
    assert await refusal(OidcAuthenticator(store, cache), token(pki.rsa_key(), "k1")) == "auth.unauthorized"


@pytest.mark.parametrize("alg", ["HS256", "none"])
async def test_symmetric_or_unsigned_tokens_are_unauthorized(store, cache, jwks, alg):
    jwks.publish("k1", pki.rsa_key())
    key = "x" * 32 if alg == "HS256" else None
    bearer = jwt.encode(
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "user-123", "exp": int(time.time()) + 60},
        key,
        algorithm=alg,
        headers={"kid": "k1"},
    )
    assert await refusal(OidcAuthenticator(store, cache), bearer) == "auth.unauthorized"


async def test_a_rotated_key_with_a_new_kid_is_fetched_again(store, cache, jwks, server, clock):
    old, new = pki.rsa_key(), pki.rsa_key()
    jwks.publish("k1", old)
    auth = OidcAuthenticator(store, cache)
    assert await auth.authenticate(Credentials(bearer=token(old, "k1")), None) is not None
    jwks.keys = {}
    jwks.publish("k2", new)
    clock.advance(31.0)
    assert await auth.authenticate(Credentials(bearer=token(new, "k2")), None) is not None
    assert server.count("/jwks.json") == 2


async def test_unknown_kids_do_not_refetch_more_often_than_the_rate_limit(store, cache, jwks, server, clock):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    auth = OidcAuthenticator(store, cache)
    assert await auth.authenticate(Credentials(bearer=token(key, "k1")), None) is not None
    clock.advance(5.0)
    for n in range(3):
        assert await refusal(auth, token(key, f"made-up-{n}")) == "auth.unauthorized"
    assert server.count("/jwks.json") == 1


async def test_a_cached_key_set_is_reused_until_its_ttl(store, cache, jwks, server):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    auth = OidcAuthenticator(store, cache)
    for _ in range(3):
        assert await auth.authenticate(Credentials(bearer=token(key, "k1")), None) is not None
    assert server.count("/jwks.json") == 1


async def test_a_loopback_jwks_url_is_refused_when_private_targets_are_not_allowed(store, jwks, server):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    guarded = JwksCache(allow_private=False)
    try:
        with pytest.raises(ForecourtError) as info:
            await guarded.get_key(f"{server.base_url}/jwks.json", "k1")
        assert info.value.code == "net.unsafe_target"
        assert await refusal(OidcAuthenticator(store, guarded), token(key, "k1")) == "auth.unauthorized"
    finally:
        await guarded.aclose()
    assert server.requests == []


async def test_a_subject_that_is_no_member_is_unauthorized(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    assert await refusal(OidcAuthenticator(store, cache), token(key, "k1", sub="stranger")) == "auth.unauthorized"


async def test_a_member_limited_to_api_keys_cannot_use_a_jwt(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    assert await refusal(OidcAuthenticator(store, cache), token(key, "k1", sub="user-456")) == "auth.unauthorized"


async def test_the_member_claim_is_honoured_only_when_the_company_allows_it(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    store.tenancy.members[("acme", "bdc")] = member("bdc")
    bearer = token(key, "k1", sub="service-account-7", forecourt_member="bdc")
    auth = OidcAuthenticator(store, cache)
    assert await refusal(auth, bearer) == "auth.unauthorized"
    store.tenancy.settings[("acme", "oidc")] = AdapterSetting(
        company_id="acme", adapter_id="oidc", config={"allow_member_claim": True}
    )
    principal = await auth.authenticate(Credentials(bearer=bearer), None)
    assert principal is not None
    assert principal.member_id == "bdc"


async def test_the_member_claim_cannot_take_over_a_member_bound_to_another_subject(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    store.tenancy.settings[("acme", "oidc")] = AdapterSetting(
        company_id="acme", adapter_id="oidc", config={"allow_member_claim": True}
    )
    bearer = token(key, "k1", sub="service-account-7", forecourt_member="crm")
    assert await refusal(OidcAuthenticator(store, cache), bearer) == "auth.unauthorized"


async def test_a_company_hint_for_another_company_finds_no_trusted_issuer(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    with pytest.raises(ForecourtError) as info:
        await OidcAuthenticator(store, cache).authenticate(Credentials(bearer=token(key, "k1")), "other")
    assert info.value.code == "auth.unauthorized"


def test_the_firebase_preset_names_the_securetoken_issuer_audience_and_jwks():
    preset = firebase_issuer("dealer-app-prod")
    assert preset.issuer == "https://securetoken.google.com/dealer-app-prod"
    assert preset.audience == "dealer-app-prod"
    assert preset.jwks_url == FIREBASE_JWKS_URL
    company = Company(id="c", profile_id="p", name="C", **preset.company_fields())
    assert company.oidc_issuer == preset.issuer


async def test_a_firebase_style_token_is_verified_like_any_oidc_token(store, cache, jwks, server):
    preset = firebase_issuer("dealer-app")
    store.tenancy.companies["fb"] = Company(
        id="fb",
        profile_id="p1",
        name="FB",
        oidc_issuer=preset.issuer,
        oidc_audience=preset.audience,
        oidc_jwks_url=f"{server.base_url}/jwks.json",
    )
    store.tenancy.members[("fb", "app-user")] = member("app-user", company_id="fb", oidc_subject="firebase-uid-1")
    key = pki.rsa_key()
    jwks.publish("fb1", key)
    bearer = token(key, "fb1", iss=preset.issuer, aud=preset.audience, sub="firebase-uid-1", auth_time=1)
    principal = await OidcAuthenticator(store, cache).authenticate(Credentials(bearer=bearer), None)
    assert principal is not None
    assert (principal.company_id, principal.member_id) == ("fb", "app-user")


async def test_clock_skew_within_the_leeway_is_tolerated_and_beyond_it_is_not(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    auth = OidcAuthenticator(store, cache, leeway_s=30.0)
    now = int(time.time())
    # The issuer's clock runs 20 s ahead (nbf/iat in our future) or the token expired 20 s ago: accepted.
    assert await auth.authenticate(Credentials(bearer=token(key, "k1", iat=now + 20, nbf=now + 20)), None)
    assert await auth.authenticate(Credentials(bearer=token(key, "k1", iat=now - 600, exp=now - 20)), None)
    # Beyond the leeway: refused, an expired token as expired.
    assert await refusal(auth, token(key, "k1", iat=now + 120, nbf=now + 120)) == "auth.unauthorized"
    assert await refusal(auth, token(key, "k1", iat=now - 600, exp=now - 120)) == "auth.expired"


async def test_a_token_for_a_retired_kid_is_refused_once_the_issuer_drops_it(store, cache, jwks, server, clock):
    old, new = pki.rsa_key(), pki.rsa_key()
    jwks.publish("old", old)
    auth = OidcAuthenticator(store, cache)
    assert await auth.authenticate(Credentials(bearer=token(old, "old")), None)
    jwks.keys.clear()
    jwks.publish("new", new)
    clock.advance(3600)  # past the key set's TTL: the next verification reads the rotated set
    assert await auth.authenticate(Credentials(bearer=token(new, "new")), None)
    assert await refusal(auth, token(old, "old")) == "auth.unauthorized"


async def test_a_token_not_valid_yet_is_refused_beyond_the_leeway(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    later = int(time.time()) + 3600
    bearer = token(key, "k1", nbf=later, iat=later, exp=later + 300)
    assert await refusal(OidcAuthenticator(store, cache), bearer) in ("auth.unauthorized", "auth.expired")


async def test_the_hmac_secret_confusion_with_the_public_key_as_secret_is_refused(store, cache, jwks):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    from cryptography.hazmat.primitives import serialization

    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT","kid":"k1"}').rstrip(b"=")
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "user-123", "exp": int(time.time()) + 60}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    import hashlib
    import hmac

    signature = base64.urlsafe_b64encode(hmac.new(public_pem, header + b"." + body, hashlib.sha256).digest())
    bearer = (header + b"." + body + b"." + signature.rstrip(b"=")).decode()
    assert await refusal(OidcAuthenticator(store, cache), bearer) == "auth.unauthorized"


@pytest.mark.parametrize(
    "kid", ["../../../../etc/passwd", "k1' OR '1'='1", "https://evil.test/jwks.json", "k1\x00", "x" * 5000]
)
async def test_an_injected_kid_is_an_unknown_key_and_fetches_nothing_but_the_configured_set(
    store, cache, jwks, server, kid
):
    key = pki.rsa_key()
    jwks.publish("k1", key)
    assert await refusal(OidcAuthenticator(store, cache), token(key, kid)) == "auth.unauthorized"
    assert all("/jwks.json" in str(r) for r in server.requests)
