"""Console sessions cannot be forged and end at once: each names a server-side record that sign-out deletes."""

from __future__ import annotations

import dataclasses

import httpx

from console.conftest import OPERATOR_KEY, csrf_of, sign_in
from forecourt.surfaces.console.session import COOKIE, Session, Sessions
from gateway.support import BAY, MOTOR, Rig


def _client(rig: Rig) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test")


def _is_signin(response: httpx.Response) -> bool:
    return response.status_code == 303 and response.headers["location"].endswith("/console/signin")


async def test_a_cookie_sealed_with_the_real_key_but_no_session_record_opens_nothing(rig: Rig) -> None:
    sealed = Sessions(rig.services.settings)  # whoever holds the sealing key can seal any value
    forged = [
        Session("operator", None, BAY, None, "Platform operator"),
        Session("operator", "fc_op_guessed", BAY, None, "Platform operator"),
        Session("key", rig.keys["admin"], MOTOR, "ops-admin", "Operations admin"),
    ]
    async with _client(rig) as client:
        for session in forged:
            client.cookies.set(COOKIE, sealed.dump(session), domain="forecourt.test", path="/console/")
            assert _is_signin(await client.get("/console/tenants"))
            minted = await client.post("/console/tenants/keys", data={"csrf": session.csrf, "member_id": "x"})
            assert _is_signin(minted)


async def test_sign_out_needs_the_sessions_csrf_token_and_ends_the_session_everywhere_at_once(rig: Rig) -> None:
    async with _client(rig) as client:
        csrf = await sign_in(client, OPERATOR_KEY)
        cookie = client.cookies.get(COOKIE)
        refused = await client.post("/console/signout", data={"csrf": "not-the-token"})
        assert refused.status_code == 403
        assert (await client.get("/console/tenants")).status_code == 200
        signed_out = await client.post("/console/signout", data={"csrf": csrf})
        assert _is_signin(signed_out)
    async with _client(rig) as replay:  # the cookie kept by someone else (or another tab) is dead too
        replay.cookies.set(COOKIE, cookie or "", domain="forecourt.test", path="/console/")
        assert _is_signin(await replay.get("/console/tenants"))


async def test_an_operator_session_ends_when_the_operator_key_is_no_longer_configured(rig: Rig) -> None:
    async with _client(rig) as client:
        await sign_in(client, OPERATOR_KEY)
        assert (await client.get("/console/tenants")).status_code == 200
        core_settings = rig.services.settings
        object.__setattr__(core_settings, "console_operator_key", None)
        try:
            assert _is_signin(await client.get("/console/tenants"))
        finally:
            object.__setattr__(core_settings, "console_operator_key", OPERATOR_KEY)
        assert _is_signin(await client.get("/console/tenants"))  # ended, not merely refused once


async def test_two_sign_ins_are_two_sessions_and_signing_out_of_one_keeps_the_other(rig: Rig) -> None:
    async with _client(rig) as first, _client(rig) as second:
        csrf = await sign_in(first, rig.keys["admin"])
        await sign_in(second, rig.keys["admin"])
        await first.post("/console/signout", data={"csrf": csrf})
        assert _is_signin(await first.get("/console/tenants"))
        page = await second.get("/console/tenants")
        assert page.status_code == 200
        assert csrf_of(page.text) != csrf


def test_the_session_id_and_csrf_token_are_random_per_session() -> None:
    one, two = Session("key", "k", None, None, "n"), Session("key", "k", None, None, "n")
    assert one.sid != two.sid
    assert one.csrf != two.csrf
    assert len(dataclasses.asdict(one)["sid"]) >= 43
