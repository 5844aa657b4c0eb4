"""Every denial through ``POST /mcp/{action}``: its code, no data, and one audit record (args redacted)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import jwt
import pytest

from forecourt.domain.tenancy import Company, Member, SecurityType
from forecourt.gateway.auth import certificate_fingerprint
from forecourt.store.base import Store
from gateway_auth import pki
from gateway_auth.servers import LoopbackServer, serve

from .support import BAY_SJ, HONDA, MOTOR, TOYOTA, Rig, error_code, register_action, set_policy

ISSUER = "https://login.motor.test"
AUDIENCE = "forecourt-motor"
EMAIL = "denied.person@example.com"
PHONE = "+14155550199"
LEAD = {
    "customer": {"first_name": "Dana", "last_name": "Denied", "email": EMAIL, "phone": PHONE},
    "message": "call me",
}


async def assert_denied(rig: Rig, response: httpx.Response, status: int, code: str) -> None:
    """The response is the error, carries no data, and exactly one audit record says so."""
    assert (response.status_code, error_code(response)) == (status, code)
    body = response.json()
    assert body["result"] is None
    assert EMAIL not in response.text
    assert PHONE not in response.text
    rows = await rig.audit_rows()
    assert len(rows) == 1, "one invocation, one audit record"
    row = rows[0]
    assert (row["status_code"], row["error_code"], row["result_class"]) == (
        status,
        code,
        "denied" if status in (401, 403, 429) else "error",
    )
    assert row["trace_id"] == body["audit"]["trace"]
    assert row["surface"] == "rest"
    assert EMAIL not in row["args_redacted"]
    assert PHONE not in row["args_redacted"]


async def test_a_key_for_one_company_cannot_reach_another_companys_dealership(rig: Rig) -> None:
    response = await rig.call("leads.list", {"dealership_id": BAY_SJ})
    await assert_denied(rig, response, 403, "auth.tenancy_denied")


async def test_a_key_narrowed_to_one_rooftop_cannot_reach_the_other(rig: Rig) -> None:
    response = await rig.call("leads.list", {"dealership_id": HONDA}, key="crm_toyota")
    await assert_denied(rig, response, 403, "auth.tenancy_denied")


async def test_a_dealership_that_does_not_exist_looks_like_one_that_is_not_yours(rig: Rig) -> None:
    response = await rig.call("leads.list", {"dealership_id": "no-such-rooftop"})
    await assert_denied(rig, response, 403, "auth.tenancy_denied")


async def test_a_revoked_key_is_refused_on_the_very_next_call(rig: Rig) -> None:
    ok = await rig.call("dealer.information", {"dealership_id": TOYOTA}, key="crm_toyota")
    assert ok.status_code == 200
    prefix = next(r.prefix for r in await rig.gateway_keys(MOTOR) if r.name == "crm_toyota")
    revoke = await rig.client.delete(
        f"/admin/v1/companies/{MOTOR}/keys/{prefix}", headers={"Authorization": f"Bearer {rig.keys['admin']}"}
    )
    assert revoke.status_code == 200
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD}, key="crm_toyota")
    assert (response.status_code, error_code(response)) == (401, "auth.unauthorized")
    assert response.json()["result"] is None
    rows = await rig.audit_rows()
    assert [(r["action"], r["status_code"]) for r in rows] == [
        ("dealer.information", 200),
        ("admin.keys.revoke", 200),
        ("leads.create", 401),
    ]
    assert EMAIL not in rows[-1]["args_redacted"]
    assert PHONE not in rows[-1]["args_redacted"]


async def test_an_expired_key_is_auth_expired(rig: Rig) -> None:
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD}, key="crm_expired")
    await assert_denied(rig, response, 401, "auth.expired")


async def test_an_unknown_key_is_unauthorized(rig: Rig) -> None:
    forged = rig.keys["crm"][:-4] + "AAAA"
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD}, key=forged)
    await assert_denied(rig, response, 401, "auth.unauthorized")


async def test_a_read_scope_never_permits_a_side_effect(rig: Rig) -> None:
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD}, key="crm_read")
    await assert_denied(rig, response, 403, "auth.insufficient_scope")
    assert response.json()["status"]["error"]["details"]["required_scope"] == "amcp:leads:write"


async def test_meta_allow_side_effects_false_blocks_a_side_effect(rig: Rig) -> None:
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD}, allow_side_effects=False)
    await assert_denied(rig, response, 403, "policy.side_effects_not_allowed")


async def test_meta_allow_side_effects_false_still_allows_reads(rig: Rig) -> None:
    response = await rig.call("dealer.information", {"dealership_id": TOYOTA}, allow_side_effects=False)
    assert response.status_code == 200


async def test_a_tool_outside_the_members_allowed_tools_is_forbidden(rig: Rig) -> None:
    response = await rig.call("leads.list", {"dealership_id": TOYOTA}, key="shopper")
    await assert_denied(rig, response, 403, "auth.forbidden")


async def test_a_forged_cursor_is_invalid_cursor(rig: Rig) -> None:
    response = await rig.call("inventory.search", {"dealership_id": TOYOTA, "cursor": "eyJvIjoxMDB9.forged"})
    await assert_denied(rig, response, 400, "invalid_cursor")


async def test_a_cursor_from_another_dealership_is_invalid_cursor(rig: Rig) -> None:
    first = await rig.call("inventory.search", {"dealership_id": TOYOTA, "limit": 1})
    cursor = first.json()["result"]["output"]["next_cursor"]
    response = await rig.call("inventory.search", {"dealership_id": HONDA, "cursor": cursor})
    assert (response.status_code, error_code(response)) == (400, "invalid_cursor")


async def test_a_policy_that_denies_the_action_is_policy_denied(make_rig: Callable[..., Awaitable[Rig]]) -> None:
    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, denied_actions=("leads.*",))

    rig = await make_rig(prepare=prepare)
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD})
    await assert_denied(rig, response, 403, "policy.denied")


async def test_a_policy_that_allows_only_some_actions_denies_the_rest(make_rig: Callable[..., Awaitable[Rig]]) -> None:
    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, allowed_actions=("inventory.*", "dealer.information"))

    rig = await make_rig(prepare=prepare)
    assert (await rig.call("inventory.search", {"dealership_id": TOYOTA})).status_code == 200
    response = await rig.call("leads.list", {"dealership_id": TOYOTA})
    assert (response.status_code, error_code(response)) == (403, "policy.denied")


async def test_a_policy_that_denies_the_adapter_is_policy_denied(make_rig: Callable[..., Awaitable[Rig]]) -> None:
    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, denied_adapters=("dealer-data",))

    rig = await make_rig(prepare=prepare)
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD})
    await assert_denied(rig, response, 403, "policy.denied")
    assert "runtime" in response.json()["status"]["message"]


async def test_a_policy_that_limits_models_denies_other_models(make_rig: Callable[..., Awaitable[Rig]]) -> None:
    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, allowed_models=("gemini-*",))

    rig = await make_rig(prepare=prepare)
    register_action(
        rig.services,
        "test.complete",
        action_type="model.invoke",
        properties={"model": {"type": "string"}},
        scope="amcp:models:read",
        dealer_scoped=False,
    )
    assert (await rig.call("test.complete", {"model": "gemini-2.5-flash"})).status_code == 200
    response = await rig.call("test.complete", {"model": "gpt-4o"})
    assert (response.status_code, error_code(response)) == (403, "policy.denied")
    assert "model" in response.json()["status"]["message"]


async def test_a_policy_without_side_effects_blocks_writes(make_rig: Callable[..., Awaitable[Rig]]) -> None:
    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, allow_side_effects=False)

    rig = await make_rig(prepare=prepare)
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD})
    await assert_denied(rig, response, 403, "policy.side_effects_not_allowed")


# ---------------------------------------------------------------- OIDC JWTs against a loopback JWKS


class Jwks:
    """The key set the loopback JWKS server publishes."""

    def __init__(self) -> None:
        self.key = pki.rsa_key()

    def handler(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        return 200, {"keys": [pki.public_jwk(self.key, "k1")]}

    def token(self, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "crm-sub", "iat": now, "exp": now + 300, **claims}
        return jwt.encode(body, pki.private_pem(self.key), algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture
def jwks() -> Iterator[tuple[Jwks, LoopbackServer]]:
    keys = Jwks()
    with serve(keys.handler) as server:
        yield keys, server


@pytest.fixture
async def oidc_rig(jwks: tuple[Jwks, LoopbackServer], make_rig: Callable[..., Awaitable[Rig]]) -> tuple[Rig, Jwks]:
    keys, server = jwks

    async def prepare(store: Store) -> None:
        async with store.transaction() as uow:
            company = await uow.tenancy.get_company(MOTOR)
            assert company is not None
            await uow.tenancy.upsert_company(
                Company.model_validate(
                    {
                        **company.model_dump(),
                        "oidc_issuer": ISSUER,
                        "oidc_audience": AUDIENCE,
                        "oidc_jwks_url": f"{server.base_url}/jwks.json",
                    }
                )
            )
            member = await uow.tenancy.get_member(MOTOR, "crm-agent")
            assert member is not None
            await uow.tenancy.upsert_member(member.model_copy(update={"oidc_subject": "crm-sub"}))

    return await make_rig(prepare=prepare, allow_private_targets=True), keys


async def test_a_valid_oidc_token_from_the_companys_issuer_is_accepted(oidc_rig: tuple[Rig, Jwks]) -> None:
    rig, keys = oidc_rig
    response = await rig.call("leads.list", {"dealership_id": TOYOTA}, key=keys.token())
    assert response.status_code == 200, response.text


async def test_an_expired_oidc_token_is_auth_expired(oidc_rig: tuple[Rig, Jwks]) -> None:
    rig, keys = oidc_rig
    now = int(time.time())
    token = keys.token(iat=now - 4000, exp=now - 3000)
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD}, key=token)
    await assert_denied(rig, response, 401, "auth.expired")


async def test_an_oidc_token_for_another_audience_is_unauthorized(oidc_rig: tuple[Rig, Jwks]) -> None:
    rig, keys = oidc_rig
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD}, key=keys.token(aud="someone-else"))
    await assert_denied(rig, response, 401, "auth.unauthorized")


async def test_an_oidc_token_from_an_unknown_issuer_is_unauthorized(oidc_rig: tuple[Rig, Jwks]) -> None:
    rig, keys = oidc_rig
    token = keys.token(iss="https://evil.example")
    response = await rig.call("leads.create", {"dealership_id": TOYOTA, **LEAD}, key=token)
    await assert_denied(rig, response, 401, "auth.unauthorized")


# ---------------------------------------------------------------- client certificates forwarded by a proxy


async def _cert_member(store: Store, fingerprint: str) -> None:
    async with store.transaction() as uow:
        await uow.tenancy.upsert_member(
            Member(
                id="tls-agent",
                company_id=MOTOR,
                profile_id="demo",
                name="TLS agent",
                security_type=SecurityType.MTLS,
                cert_fingerprint=fingerprint,
                allowed_tools=("*",),
                scopes=("amcp:leads:read", "amcp:leads:write"),
                dealership_ids=(TOYOTA,),
            )
        )


async def test_a_client_cert_header_from_an_untrusted_address_is_unauthorized(
    make_rig: Callable[..., Awaitable[Rig]],
) -> None:
    leaf = pki.make_leaf(pki.make_ca(), "tls-agent")

    async def prepare(store: Store) -> None:
        await _cert_member(store, certificate_fingerprint(leaf.cert))

    rig = await make_rig(prepare=prepare, trusted_proxies=["10.9.9.9"])
    response = await rig.call(
        "leads.create",
        {"dealership_id": TOYOTA, **LEAD},
        key=None,
        headers={"X-Forwarded-Client-Cert": leaf.cert_pem.replace("\n", "%0A")},
    )
    await assert_denied(rig, response, 401, "auth.unauthorized")


async def test_a_client_cert_header_from_a_trusted_proxy_authenticates(
    make_rig: Callable[..., Awaitable[Rig]],
) -> None:
    leaf = pki.make_leaf(pki.make_ca(), "tls-agent")

    async def prepare(store: Store) -> None:
        await _cert_member(store, certificate_fingerprint(leaf.cert))

    # httpx's ASGI transport presents the peer as 127.0.0.1.
    rig = await make_rig(prepare=prepare, trusted_proxies=["127.0.0.1/32"])
    response = await rig.call(
        "leads.list",
        {"dealership_id": TOYOTA},
        key=None,
        headers={"X-Forwarded-Client-Cert": leaf.cert_pem.replace("\n", "%0A")},
    )
    assert response.status_code == 200, response.text
