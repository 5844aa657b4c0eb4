"""A PostgreSQL outage seen through the REST front door: retryable 503s, no hang, recovery, nothing lost.

The app reaches the real PostgreSQL server through a loopback relay that the test switches off (every open
connection cut, new ones refused — what clients see while the server restarts) and on again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from forecourt.bootstrap import Services, create_app
from forecourt.demo import load_demo
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async
from gateway_backends.support import TcpRelay

pytestmark = pytest.mark.postgres

MOTOR = "demo-motor-group"
TOYOTA = "demo-toyota-sf"
PEPPER = "pg-outage-pepper-0123456789abcdef"
CALL_DEADLINE_S = 10.0


@pytest.fixture
async def relay(postgres_url: str) -> AsyncIterator[TcpRelay]:
    parts = urlsplit(postgres_url)
    made = TcpRelay(parts.hostname or "127.0.0.1", parts.port or 5432)
    await made.start()
    try:
        yield made
    finally:
        if made._server is not None:
            await made.stop()


async def _prepare(database_url: str) -> str:
    await upgrade_async(database_url)
    store = open_store_url(database_url)
    try:
        await load_demo(store, vehicles_per_dealership=12)
        return (await ApiKeyService(store, PEPPER, MemoryRevocationList()).create(MOTOR, "crm-agent")).key
    finally:
        await store.close()


def _lead(n: int) -> dict[str, Any]:
    return {
        "dealership_id": TOYOTA,
        "customer": {"first_name": "Pat", "last_name": f"Outage{n}", "email": f"outage{n}@example.com"},
        "message": "Call me back.",
    }


async def _rows(database_url: str, sql: str) -> int:
    conn = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        return int(await conn.fetchval(sql))
    finally:
        await conn.close()


async def test_calls_during_a_postgres_outage_fail_retryably_and_every_audit_record_and_event_survives(
    postgres_url: str, relay: TcpRelay
) -> None:
    key = await _prepare(postgres_url)
    lead_events = "SELECT count(*) FROM outbox WHERE resource_type = 'lead' AND change_type = 'created'"
    events_before = await _rows(postgres_url, lead_events)
    settings = Settings(
        database_url=relay.url_for(postgres_url),
        api_key_pepper=PEPPER,
        instance_name="pg-outage",
        audit_flush_interval_s=0.05,
    )
    app = create_app(settings)
    services: Services = app.state.services
    await services.start()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://forecourt.test")
    calls = 0

    async def call(action: str, payload: dict[str, Any]) -> httpx.Response:
        nonlocal calls
        calls += 1
        body = {"id": f"r{calls}", "payload": payload}
        headers = {"Authorization": f"Bearer {key}"}
        # Bounded: a call during the outage must be answered, not hang on a dead connection.
        return await asyncio.wait_for(client.post(f"/mcp/{action}", json=body, headers=headers), CALL_DEADLINE_S)

    try:
        before = [await call("inventory.search", {"dealership_id": TOYOTA}), await call("leads.create", _lead(1))]
        assert [r.status_code for r in before] == [200, 200]

        await relay.stop()
        during = [await call("inventory.search", {"dealership_id": TOYOTA}), await call("leads.create", _lead(2))]
        for response in during:
            assert response.status_code == 503, response.text
            error = response.json()["status"]["error"]
            assert (error["code"], error["retryable"]) == ("store.unavailable", True)
        assert services.audit.pending >= len(during)  # buffered while the database is away

        await relay.start()
        after = [await call("inventory.search", {"dealership_id": TOYOTA}), await call("leads.create", _lead(3))]
        assert [r.status_code for r in after] == [200, 200], [r.text for r in after]
        assert await services.audit.flush()
    finally:
        await client.aclose()
        await services.close()

    assert await _rows(postgres_url, "SELECT count(*) FROM audit_records") == calls
    assert await _rows(postgres_url, "SELECT count(*) FROM audit_records WHERE status_code = 503") == len(during)
    # The lead refused during the outage left neither a row nor an event; the two made left one event each.
    assert await _rows(postgres_url, lead_events) == events_before + 2
    assert await _rows(postgres_url, "SELECT count(*) FROM leads WHERE message = 'Call me back.'") == 2
    matched = "SELECT count(*) FROM outbox o JOIN leads l ON o.resource_id = l.id WHERE l.message = 'Call me back.'"
    assert await _rows(postgres_url, matched) == 2
