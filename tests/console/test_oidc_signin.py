"""Console sign-in with OIDC (authorization code + PKCE) against a local provider that signs real JWTs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from console.fake_oidc import FakeOidcProvider
from fakes.server import LoopbackServer
from forecourt.store.base import Store
from gateway.support import MOTOR, Rig, Template, start_rig, stop_rig

AUDIENCE = "forecourt-console-demo"
SUBJECT = "idp|ops-admin-42"


@pytest.fixture
def provider() -> Iterator[FakeOidcProvider]:
    fake = FakeOidcProvider(SUBJECT)
    server = LoopbackServer(fake.app)
    server.start()
    fake.issuer = server.base_url
    try:
        yield fake
    finally:
        server.stop()


@pytest.fixture
async def oidc_rig(console_template: Template, tmp_path: Path, provider: FakeOidcProvider) -> AsyncIterator[Rig]:
    async def trust_the_provider(store: Store) -> None:
        async with store.transaction() as uow:
            company = await uow.tenancy.get_company(MOTOR)
            member = await uow.tenancy.get_member(MOTOR, "ops-admin")
            assert company is not None
            assert member is not None
            await uow.tenancy.upsert_company(
                company.model_copy(update={"oidc_issuer": provider.issuer, "oidc_audience": AUDIENCE})
            )
            await uow.tenancy.upsert_member(member.model_copy(update={"oidc_subject": SUBJECT}))

    made = await start_rig(
        console_template,
        tmp_path,
        prepare=trust_the_provider,
        allow_private_targets=True,
        public_base_url="http://forecourt.test",
    )
    try:
        yield made
    finally:
        await stop_rig(made)


def _client(rig: Rig) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test")


async def _authorize(location: str) -> httpx.Response:
    async with httpx.AsyncClient() as browser:
        return await browser.get(location)


async def test_oidc_sign_in_with_pkce_opens_a_session_as_the_subjects_member(
    oidc_rig: Rig, provider: FakeOidcProvider
) -> None:
    async with _client(oidc_rig) as client:
        start = await client.get("/console/oidc/start", params={"company": MOTOR})
        assert start.status_code == 303
        location = start.headers["location"]
        query = parse_qs(urlparse(location).query)
        assert query["code_challenge_method"] == ["S256"]
        assert query["client_id"] == [AUDIENCE]
        back = await _authorize(location)
        assert back.status_code == 302
        callback = urlparse(back.headers["location"])
        assert callback.path == "/console/oidc/callback"
        signed_in = await client.get(f"{callback.path}?{callback.query}")
        assert signed_in.status_code == 303, signed_in.text
        overview = await client.get("/console/")
        assert overview.status_code == 200
        assert "Operations admin" in overview.text
    assert len(provider.token_requests) == 1
    assert provider.token_requests[0]["code_verifier"]
    records = [r for r in await oidc_rig.audit(MOTOR) if r.surface == "console"]
    assert records
    assert {r.member_id for r in records} == {"ops-admin"}


async def test_oidc_callback_with_a_foreign_state_or_without_the_start_cookie_is_refused(
    oidc_rig: Rig, provider: FakeOidcProvider
) -> None:
    async with _client(oidc_rig) as client:
        start = await client.get("/console/oidc/start", params={"company": MOTOR})
        back = await _authorize(start.headers["location"])
        callback = urlparse(back.headers["location"])
        code = parse_qs(callback.query)["code"][0]
        forged = await client.get("/console/oidc/callback", params={"code": code, "state": "not-the-state"})
        assert forged.status_code == 400
    async with _client(oidc_rig) as stranger:
        stolen = await stranger.get(f"{callback.path}?{callback.query}")
        assert stolen.status_code == 400
        assert (await stranger.get("/console/")).headers["location"].endswith("/console/signin")
    assert provider.token_requests == []
