"""A Redis outage seen through the REST front door: no crash, the configured fail mode, recovery when it returns.

The app talks to the real Redis through a loopback relay that the test switches off and on (no mocks).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from gateway.support import TOYOTA, Rig, Template, build_template, start_rig, stop_rig
from gateway_backends.support import TcpRelay

SEARCH = {"dealership_id": TOYOTA}


@pytest.fixture(scope="module")
def fault_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    import asyncio

    path = tmp_path_factory.mktemp("faults-template") / "template.db"
    return Template(path, asyncio.run(build_template(path)))


@pytest.fixture
async def relay(redis_url: str) -> AsyncIterator[TcpRelay]:
    parts = urlsplit(redis_url)
    made = TcpRelay(parts.hostname or "127.0.0.1", parts.port or 6379)
    await made.start()
    try:
        yield made
    finally:
        if made._server is not None:
            await made.stop()


async def _rig(template: Template, tmp_path: Path, relay: TcpRelay, redis_url: str, prefix: str, mode: str) -> Rig:
    return await start_rig(
        template,
        tmp_path,
        redis_url=relay.url_for(redis_url),
        redis_prefix=prefix,
        rate_limit_fail_mode=mode,
        cache_enabled=True,
    )


async def test_with_redis_down_calls_are_served_unmetered_and_uncached_then_recover_when_it_returns(
    fault_template: Template, tmp_path: Path, relay: TcpRelay, redis_url: str, redis_prefix: str
) -> None:
    rig = await _rig(fault_template, tmp_path, relay, redis_url, redis_prefix, "open")
    try:
        assert (await rig.call("inventory.search", SEARCH)).status_code == 200
        await relay.stop()
        for _ in range(3):
            response = await rig.call("inventory.search", SEARCH)
            assert response.status_code == 200
            assert response.json()["result"]["output"]["items"]
        await relay.start()
        recovered = await rig.call("inventory.search", SEARCH)
        assert recovered.status_code == 200
        assert "RateLimit-Limit" in recovered.headers
    finally:
        await stop_rig(rig)


async def test_with_redis_down_and_rate_limits_failing_closed_calls_get_a_retryable_503_then_recover(
    fault_template: Template, tmp_path: Path, relay: TcpRelay, redis_url: str, redis_prefix: str
) -> None:
    rig = await _rig(fault_template, tmp_path, relay, redis_url, redis_prefix, "closed")
    try:
        assert (await rig.call("inventory.search", SEARCH)).status_code == 200
        await relay.stop()
        refused = await rig.call("inventory.search", SEARCH)
        assert refused.status_code == 503
        error = refused.json()["status"]["error"]
        assert (error["code"], error["retryable"]) == ("overloaded", True)
        await relay.start()
        assert (await rig.call("inventory.search", SEARCH)).status_code == 200
    finally:
        await stop_rig(rig)


async def test_with_redis_down_a_side_effect_with_an_idempotency_key_is_refused_rather_than_risked_twice(
    fault_template: Template, tmp_path: Path, relay: TcpRelay, redis_url: str, redis_prefix: str
) -> None:
    rig = await _rig(fault_template, tmp_path, relay, redis_url, redis_prefix, "open")
    lead = {
        "dealership_id": TOYOTA,
        "customer": {"first_name": "Ada", "email": "ada@example.com"},
        "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"]},
    }
    try:
        await relay.stop()
        refused = await rig.call("leads.create", lead, headers={"Idempotency-Key": "outage-1"})
        assert refused.status_code == 503
        assert refused.json()["status"]["error"]["retryable"] is True
        await relay.start()
        first = await rig.call("leads.create", lead, headers={"Idempotency-Key": "outage-1"})
        again = await rig.call("leads.create", lead, headers={"Idempotency-Key": "outage-1"})
        assert first.status_code == again.status_code == 200
        assert first.json()["result"]["output"] == again.json()["result"]["output"]
    finally:
        await stop_rig(rig)
