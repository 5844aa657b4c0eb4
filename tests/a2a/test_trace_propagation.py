"""W3C ``traceparent`` crosses every outbound hop: the httpx and aiohttp clients Forecourt calls out with, and seed
001 §9's Agent A → A2A → Agent B, whose audit records then name one trace."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from aap.support import MOTOR, TOYOTA, LiveServer, build_template, settings_for
from fakes.webhook import Webhook
from forecourt.bootstrap import create_app
from forecourt.outbound_aiohttp import guarded_session
from forecourt.outbound_urls import guarded_transport

CARD = "/agent/.well-known/agent-card.json"


@pytest.fixture(scope="module")
def hook() -> Iterator[Webhook]:
    made = Webhook()
    try:
        yield made
    finally:
        made.server.stop()


def _trace_of(headers: dict[str, str]) -> str:
    version, trace_id, span_id, flags = headers["traceparent"].split("-")
    assert (version, len(trace_id), len(span_id), len(flags)) == ("00", 32, 16, 2)
    return trace_id


async def test_the_guarded_httpx_and_aiohttp_clients_send_the_current_trace(hook: Webhook) -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("outbound") as span:
        expected = format(span.get_span_context().trace_id, "032x")
        async with httpx.AsyncClient(transport=guarded_transport(allow_private=True)) as http:
            await http.post(hook.url, json={"via": "httpx"})
        async with guarded_session(allow_private=True) as session, session.post(hook.url, json={"via": "aiohttp"}):
            pass
    received = hook.received[-2:]
    assert [_trace_of(headers) for _, headers in received] == [expected, expected]
    # A request that names its own trace keeps it.
    own = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    with tracer.start_as_current_span("outbound"):
        async with httpx.AsyncClient(transport=guarded_transport(allow_private=True)) as http:
            await http.post(hook.url, json={}, headers={"traceparent": own})
    assert hook.received[-1][1]["traceparent"] == own


def _start(directory: Path, template: Path, **overrides: Any) -> tuple[LiveServer, Path]:
    import shutil

    db = directory / "forecourt.db"
    shutil.copyfile(template, db)
    return LiveServer(create_app(settings_for(db, **overrides))).start(), db


async def _admin_key(db: Path) -> str:
    from forecourt.gateway.auth.apikeys import ApiKeyService
    from forecourt.gateway.backends.memory import MemoryRevocationList
    from forecourt.store import open_store_url

    store = open_store_url(f"sqlite+aiosqlite:///{db}")
    try:
        service = ApiKeyService.from_settings(settings_for(db), store, MemoryRevocationList())
        return (await service.create(MOTOR, "ops-admin", name="audit-reader")).key
    finally:
        await store.close()


async def _audit(server: LiveServer, key: str, action: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        for _ in range(200):  # the audit writer flushes every 50 ms
            page = await http.get(f"{server.url}/admin/v1/companies/{MOTOR}/audit", params={"limit": 1000})
            found = [r for r in page.json()["items"] if r["action"] == action]
            if found:
                return found
            await asyncio.sleep(0.05)
    raise AssertionError(f"no audit record of {action}")


async def test_agent_a_to_agent_b_over_a2a_is_one_trace_in_both_audits(tmp_path: Path) -> None:
    template = tmp_path / "template.db"
    keys = await build_template(template)
    b_dir, a_dir = tmp_path / "b", tmp_path / "a"
    b_dir.mkdir()
    a_dir.mkdir()
    agent_b, b_db = await asyncio.to_thread(_start, b_dir, template)
    try:
        secret = tmp_path / "agent-b-token"
        secret.write_text(keys["crm"])
        configs = tmp_path / "adapters"
        configs.mkdir()
        (configs / "a2a-peers.yaml").write_text(
            f"peers:\n  agent-b: {{card_url: '{agent_b.url}{CARD}'}}\ncredentials: {{type: secret, file: '{secret}'}}\n"
        )
        agent_a, a_db = await asyncio.to_thread(_start, a_dir, template, adapter_config_dir=configs)
        try:
            body = {
                "action": {"type": "tool.run", "name": "agents.delegate", "version": "v1"},
                "payload": {
                    "peer": "agent-b",
                    "action": "embedding.create",
                    "payload": {"input": "Is there a loaner car?", "dealership_id": TOYOTA},
                },
                "security": {"companyContext": {"companyId": MOTOR}},
            }
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {keys['crm']}"}, timeout=60) as http:
                response = await http.post(agent_a.url + "/mcp/agents.delegate", json=body)
            assert response.status_code == 200, response.text
            a_records = await _audit(agent_a, await _admin_key(a_db), "agents.delegate")
            b_records = await _audit(agent_b, await _admin_key(b_db), "embedding.create")
        finally:
            await asyncio.to_thread(agent_a.stop)
    finally:
        await asyncio.to_thread(agent_b.stop)
    trace_id = a_records[-1]["trace_id"]
    assert len(trace_id) == 32
    assert [r["trace_id"] for r in b_records] == [trace_id]
