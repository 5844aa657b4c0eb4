"""API keys and the mTLS member index against the real SQL store on SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from forecourt.domain.tenancy import Company, Member, Profile, SecurityType
from forecourt.errors import ForecourtError
from forecourt.gateway.auth import ApiKeyService, build_authenticator, certificate_fingerprint
from forecourt.gateway.base import Credentials
from forecourt.settings import Settings
from forecourt.store import SqlStore, open_store_url, upgrade_async

from . import pki
from .fakes import SharedRevocations


@pytest.fixture
async def sql_store(sqlite_url: str) -> AsyncIterator[SqlStore]:
    await upgrade_async(sqlite_url)
    store = open_store_url(sqlite_url)
    async with store.transaction() as uow:
        await uow.tenancy.upsert_profile(Profile(id="p1", name="P"))
        await uow.tenancy.upsert_company(Company(id="acme", profile_id="p1", name="Acme"))
    try:
        yield store
    finally:
        await store.close()


async def test_a_key_created_in_the_sql_store_authenticates_and_stops_at_revocation(sql_store):
    async with sql_store.transaction() as uow:
        await uow.tenancy.upsert_member(
            Member(id="crm", company_id="acme", profile_id="p1", name="CRM", scopes=("amcp:leads:read",))
        )
    settings = Settings(api_key_pepper="sql-pepper-0123456789")  # type: ignore[arg-type]
    revocations = SharedRevocations()
    issued = await ApiKeyService.from_settings(settings, sql_store, revocations).create("acme", "crm")
    auth = build_authenticator(settings, sql_store, revocations)
    principal = await auth.authenticate(Credentials(bearer=issued.key), None)
    assert (principal.member_id, principal.scopes) == ("crm", frozenset({"amcp:leads:read"}))
    await ApiKeyService.from_settings(settings, sql_store, revocations).revoke(issued.prefix)
    with pytest.raises(ForecourtError) as info:
        await auth.authenticate(Credentials(bearer=issued.key), None)
    assert info.value.code == "auth.unauthorized"
    await auth.aclose()


async def test_a_client_certificate_finds_its_member_in_the_sql_store(sql_store):
    ca = pki.make_ca()
    leaf = pki.make_leaf(ca, "tls-agent")
    async with sql_store.transaction() as uow:
        await uow.tenancy.upsert_member(
            Member(
                id="tls-agent",
                company_id="acme",
                profile_id="p1",
                name="TLS",
                security_type=SecurityType.MTLS,
                cert_fingerprint=certificate_fingerprint(leaf.cert),
            )
        )
    auth = build_authenticator(Settings(), sql_store, SharedRevocations())
    principal = await auth.authenticate(Credentials(client_cert_pem=leaf.cert_pem), None)
    assert (principal.method, principal.member_id) == ("mtls", "tls-agent")
    await auth.aclose()
