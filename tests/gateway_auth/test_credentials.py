"""Credential providers: Google OAuth tokens from a loopback token endpoint, signed JWTs, named secrets, the broker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jwt
import pytest

from forecourt.domain.tenancy import AdapterSetting
from forecourt.errors import ForecourtError
from forecourt.gateway.credentials import (
    CredentialBroker,
    GoogleCredentialProvider,
    SecretProvider,
    SignedJwtProvider,
    merge_credentials_config,
)

from . import pki
from .fakes import MemoryStore
from .servers import LoopbackServer, form, serve

HMAC_KEY = "k" * 48
GOOGLE_TOKEN_AUD = "https://oauth2.googleapis.com/token"


class TokenEndpoint:
    """Speaks Google's OAuth 2.0 JWT-bearer grant: verifies the service account's assertion, returns a token."""

    def __init__(self, public_key: Any) -> None:
        self.public_key = public_key
        self.expires_in = 3600
        self.fail = False
        self.issued = 0
        self.url = ""

    def handler(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        fields = form(body)
        if self.fail or fields.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return 400, {"error": "invalid_grant"}
        try:
            # google-auth addresses the assertion to Google's token endpoint whatever token_uri says
            claims = jwt.decode(fields["assertion"], self.public_key, algorithms=["RS256"], audience=GOOGLE_TOKEN_AUD)
        except jwt.InvalidTokenError:
            return 400, {"error": "invalid_grant"}
        assert claims["iss"] == "vertex-caller@proj.iam.gserviceaccount.com"
        assert claims["scope"] == "https://www.googleapis.com/auth/cloud-platform"
        self.issued += 1
        return 200, {"access_token": f"ya29.test-{self.issued}", "expires_in": self.expires_in, "token_type": "Bearer"}


@pytest.fixture(scope="module")
def sa_key() -> Any:
    return pki.rsa_key()


@pytest.fixture
def endpoint(sa_key: Any) -> Iterator[tuple[TokenEndpoint, LoopbackServer]]:
    ep = TokenEndpoint(sa_key.public_key())
    with serve(ep.handler) as server:
        ep.url = f"{server.base_url}/token"
        yield ep, server


@pytest.fixture
def sa_file(tmp_path: Path, sa_key: Any, endpoint: tuple[TokenEndpoint, LoopbackServer]) -> Path:
    info = {
        "type": "service_account",
        "project_id": "proj",
        "private_key_id": "key-1",
        "private_key": pki.private_pem(sa_key),
        "client_email": "vertex-caller@proj.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": endpoint[0].url,
    }
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    return path


async def failure(provider: Any, config: dict[str, Any], adapter: str = "vertex") -> str:
    with pytest.raises(ForecourtError) as info:
        await provider.issue(adapter, "acme", config)
    return info.value.code


async def test_a_service_account_token_is_minted_at_its_token_uri_and_reused_until_near_expiry(sa_file, endpoint):
    ep, _ = endpoint
    provider = GoogleCredentialProvider(environ={})
    try:
        first = await provider.issue("vertex", "acme", {"service_account_file": str(sa_file)})
        second = await provider.issue("vertex", "acme", {"service_account_file": str(sa_file)})
    finally:
        provider.close()
    assert first.kind == "bearer"
    assert first.value == second.value == "ya29.test-1"
    assert first.headers["Authorization"] == "Bearer ya29.test-1"
    assert first.expires_at is not None
    assert first.expires_at > datetime.now(UTC)
    assert ep.issued == 1
    assert "ya29" not in repr(first)


async def test_a_token_close_to_expiry_is_refreshed_on_the_next_call(sa_file, endpoint):
    ep, _ = endpoint
    ep.expires_in = 60  # inside the five-minute refresh margin
    provider = GoogleCredentialProvider(environ={})
    try:
        a = await provider.issue("vertex", "acme", {"service_account_file": str(sa_file)})
        b = await provider.issue("vertex", "acme", {"service_account_file": str(sa_file)})
    finally:
        provider.close()
    assert (a.value, b.value, ep.issued) == ("ya29.test-1", "ya29.test-2", 2)


async def test_reuse_false_mints_a_token_per_call(sa_file, endpoint):
    ep, _ = endpoint
    provider = GoogleCredentialProvider(environ={})
    try:
        for _ in range(2):
            await provider.issue("vertex", None, {"service_account_file": str(sa_file), "reuse": False})
    finally:
        provider.close()
    assert ep.issued == 2


async def test_the_service_account_json_can_come_from_a_named_variable(sa_file, endpoint):
    provider = GoogleCredentialProvider(environ={"VERTEX_SA_JSON": sa_file.read_text()})
    try:
        issued = await provider.issue("vertex", "acme", {"service_account_env": "VERTEX_SA_JSON"})
    finally:
        provider.close()
    assert issued.value == "ya29.test-1"


async def test_a_refused_token_exchange_is_credentials_unavailable(sa_file, endpoint):
    endpoint[0].fail = True
    provider = GoogleCredentialProvider(environ={})
    try:
        assert await failure(provider, {"service_account_file": str(sa_file)}) == "credentials.unavailable"
    finally:
        provider.close()


async def test_a_missing_service_account_file_is_credentials_unavailable(tmp_path):
    provider = GoogleCredentialProvider(environ={})
    try:
        code = await failure(provider, {"service_account_file": str(tmp_path / "absent.json")})
    finally:
        provider.close()
    assert code == "credentials.unavailable"


async def test_a_signed_hs256_jwt_names_the_adapter_as_audience_and_lives_at_most_five_minutes():
    provider = SignedJwtProvider(environ={"WF_KEY": HMAC_KEY})
    issued = await provider.issue("workflow", "acme", {"algorithm": "HS256", "key_env": "WF_KEY", "ttl_s": 3600})
    claims = jwt.decode(issued.value, HMAC_KEY, algorithms=["HS256"], audience="workflow")
    assert claims["sub"] == "acme"
    assert claims["exp"] - claims["iat"] == 300
    assert issued.expires_at is not None
    assert issued.value not in repr(issued)


async def test_a_signed_rs256_jwt_verifies_with_the_public_key(tmp_path):
    key = pki.rsa_key()
    path = tmp_path / "signer.pem"
    path.write_text(pki.private_pem(key))
    provider = SignedJwtProvider(environ={})
    issued = await provider.issue("knowledge", None, {"algorithm": "RS256", "key_file": str(path), "kid": "s1"})
    assert jwt.get_unverified_header(issued.value)["kid"] == "s1"
    claims = jwt.decode(issued.value, key.public_key(), algorithms=["RS256"], audience="knowledge")
    assert claims["sub"] == "forecourt"
    assert claims["exp"] - claims["iat"] == 120


async def test_a_short_hmac_key_is_credentials_unavailable():
    provider = SignedJwtProvider(environ={"WF_KEY": "short"})
    assert await failure(provider, {"algorithm": "HS256", "key_env": "WF_KEY"}) == "credentials.unavailable"


async def test_a_secret_is_read_from_the_variable_the_config_names(tmp_path):
    provider = SecretProvider(environ={"NIM_API_KEY": "nvapi-123\n"})
    issued = await provider.issue("nvidia", "acme", {"env": "NIM_API_KEY"})
    assert (issued.kind, issued.value, dict(issued.headers)) == ("api_key", "nvapi-123", {"X-API-Key": "nvapi-123"})
    path = tmp_path / "openai.key"
    path.write_text("sk-test-1\n")
    bearer = await provider.issue("openai", "acme", {"file": str(path), "kind": "bearer"})
    assert dict(bearer.headers) == {"Authorization": "Bearer sk-test-1"}


async def test_forecourts_own_settings_cannot_be_read_as_an_adapter_secret():
    provider = SecretProvider(environ={"FORECOURT_API_KEY_PEPPER": "pepper"})
    assert await failure(provider, {"env": "FORECOURT_API_KEY_PEPPER"}) == "credentials.unavailable"
    assert await failure(provider, {"env": "forecourt_api_key_pepper"}) == "credentials.unavailable"


async def test_an_unset_secret_variable_is_credentials_unavailable():
    assert await failure(SecretProvider(environ={}), {"env": "NOT_SET"}) == "credentials.unavailable"


async def test_the_broker_picks_the_provider_from_the_adapter_config_with_company_overrides_on_top():
    store = MemoryStore()
    store.tenancy.settings[("acme", "workflow")] = AdapterSetting(
        company_id="acme", adapter_id="workflow", config={"credentials": {"ttl_s": 60, "issuer": "acme-gw"}}
    )
    broker = CredentialBroker(store=store, environ={"WF_KEY": HMAC_KEY})
    config = {"credentials": {"type": "jwt", "key_env": "WF_KEY", "ttl_s": 200}}
    issued = await broker.issue("workflow", "acme", config)
    claims = jwt.decode(issued.value, HMAC_KEY, algorithms=["HS256"], audience="workflow")
    assert (claims["iss"], claims["exp"] - claims["iat"]) == ("acme-gw", 60)
    other = jwt.decode(
        (await broker.issue("workflow", "beta", config)).value, HMAC_KEY, algorithms=["HS256"], audience="workflow"
    )
    assert (other["iss"], other["exp"] - other["iat"]) == ("forecourt", 200)


async def test_a_company_override_cannot_point_a_secret_at_another_variable():
    store = MemoryStore()
    store.tenancy.settings[("acme", "nvidia")] = AdapterSetting(
        company_id="acme", adapter_id="nvidia", config={"credentials": {"env": "OPERATOR_DB_PASSWORD"}}
    )
    broker = CredentialBroker(store=store, environ={"NIM_KEY": "nvapi-ok", "OPERATOR_DB_PASSWORD": "hunter2"})
    issued = await broker.issue("nvidia", "acme", {"credentials": {"type": "secret", "env": "NIM_KEY"}})
    assert issued.value == "nvapi-ok"


def test_the_operator_can_let_companies_name_their_own_secret_sources():
    base = {"type": "secret", "env": "DEFAULT_KEY", "allow_company_secret_sources": True}
    assert merge_credentials_config(base, {"env": "ACME_KEY"})["env"] == "ACME_KEY"
    assert merge_credentials_config({"type": "secret", "env": "K"}, {"allow_company_secret_sources": True}) == {
        "type": "secret",
        "env": "K",
    }


async def test_no_credentials_section_means_no_credential_and_an_unknown_type_is_unavailable():
    broker = CredentialBroker(environ={})
    assert (await broker.issue("inventory", "acme", {})).kind == "none"
    assert await failure(broker, {"credentials": {"type": "kerberos"}}) == "credentials.unavailable"


async def test_a_config_the_gateway_already_merged_still_loses_company_secret_locators():
    defaults = {"nvidia": {"credentials": {"type": "secret", "env": "NIM_KEY", "header": "X-API-Key"}}}
    broker = CredentialBroker(adapter_defaults=defaults, environ={"NIM_KEY": "nvapi-ok", "OPERATOR_DB_PASSWORD": "x"})
    merged = {"credentials": {"type": "secret", "env": "OPERATOR_DB_PASSWORD", "header": "Api-Key"}}
    issued = await broker.issue("nvidia", "acme", merged)
    assert issued.value == "nvapi-ok"
    assert dict(issued.headers) == {"Api-Key": "nvapi-ok"}


async def test_credentials_a_company_adds_where_the_operator_configured_none_are_unavailable():
    broker = CredentialBroker(adapter_defaults={}, environ={"SOME_VAR": "v"})
    assert await failure(broker, {"credentials": {"type": "secret", "env": "SOME_VAR"}}) == "credentials.unavailable"
