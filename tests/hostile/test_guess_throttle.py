"""Credential guessing is throttled per client address: on the REST envelope, MCP, A2A and console sign-in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gateway.support import TOYOTA, Rig, Template, start_rig, stop_rig

from .conftest import HIGH_LIMITS

LIMIT = 5


@pytest.fixture
async def throttled(hostile_template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    made = await start_rig(hostile_template, tmp_path, auth_failures_per_minute=LIMIT, **HIGH_LIMITS)
    try:
        yield made
    finally:
        await stop_rig(made)


def _guess(n: int) -> dict[str, str]:
    return {"Authorization": f"Bearer fck_guess{n:04d}_{'x' * 32}"}


async def _envelope(rig: Rig, headers: dict[str, str]) -> httpx.Response:
    body = {"payload": {"dealership_id": TOYOTA}}
    return await rig.client.post("/mcp/dealer.information", json=body, headers=headers)


async def test_guesses_past_the_limit_are_refused_unchecked_and_a_right_key_then_waits_too(throttled: Rig) -> None:
    statuses = [(await _envelope(throttled, _guess(n))).status_code for n in range(LIMIT + 3)]
    assert statuses[:LIMIT] == [401] * LIMIT
    assert set(statuses[LIMIT:]) == {429}
    right = await _envelope(throttled, {"Authorization": f"Bearer {throttled.keys['crm']}"})
    assert right.status_code == 429  # not even checked: a guess that might be right is never tried
    assert right.headers["Retry-After"]
    assert right.json()["status"]["error"]["details"]["scope"] == "auth_failures"


async def test_a_good_key_is_never_slowed_by_its_own_successes(throttled: Rig) -> None:
    headers = {"Authorization": f"Bearer {throttled.keys['crm']}"}
    statuses = {(await _envelope(throttled, headers)).status_code for _ in range(LIMIT * 4)}
    assert statuses == {200}


async def test_console_sign_in_attempts_are_throttled_like_any_other_guess(throttled: Rig) -> None:
    async with httpx.AsyncClient(transport=throttled.client._transport, base_url="http://forecourt.test") as client:
        codes = [
            (await client.post("/console/signin", data={"api_key": f"guess-{n}-{'y' * 30}"})).status_code
            for n in range(LIMIT + 3)
        ]
        assert 429 in codes[LIMIT:] or all(c in (401, 403, 429) for c in codes)
        assert codes[-1] == 429
        refused = await client.post("/console/signin", data={"api_key": throttled.keys["admin"]})
        assert refused.status_code == 429


async def test_other_addresses_are_not_refused_for_one_clients_guesses(throttled: Rig) -> None:
    for n in range(LIMIT + 1):
        await _envelope(throttled, _guess(n))
    other = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=throttled.client._transport.app, client=("192.0.2.77", 4000)),  # type: ignore[attr-defined]
        base_url="http://forecourt.test",
    )
    async with other:
        body = {"payload": {"dealership_id": TOYOTA}}
        answer = await other.post(
            "/mcp/dealer.information", json=body, headers={"Authorization": f"Bearer {throttled.keys['crm']}"}
        )
    assert answer.status_code == 200
