"""The cross-door contract with the knowledge family remote: ``knowledge.search_inventory`` through the REST envelope,
MCP Streamable HTTP in both eras and MCP over stdio (its own process, on the same database) runs on one knowledge host,
whose inventory searches come back to the HTTP gateway — the stdio process names it as ``callback_url``, as a
replica names its fleet's address — and every door gets the same answer, audited once per call and once per nested
search, in the gateway, as the caller."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.doors import Server, door
from forecourt.store import open_store_url

from .support import (
    CURSOR_SECRET,
    MOTOR,
    PEPPER,
    SECRET,
    SECRET_ENV,
    TOYOTA,
    GatewayServer,
    HostServer,
    adapter_dir,
    settings_for,
)

DOORS = ("rest", "mcp-legacy", "mcp-stateless", "stdio")
QUERY = {"query": "a used car", "limit": 3}


@pytest.fixture(scope="module")
def remote_knowledge(
    template: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, HostServer, Path]]:
    """One HTTP gateway (and the environment of its stdio twin) with the knowledge family on one host."""
    tmp = tmp_path_factory.mktemp("remote-knowledge-doors")
    patch = pytest.MonkeyPatch()
    patch.setenv(SECRET_ENV, SECRET)
    db = tmp / "forecourt.db"
    shutil.copyfile(template[0], db)
    host = HostServer(settings_for(db, adapter_dir(tmp / "host-adapters"), "adapter-host-1"), "knowledge")
    host.server.start()
    config_dir = tmp / "gateway-adapters"

    def gateway_settings(url: str) -> Any:
        remote = {
            "families": {"knowledge": {"hosts": [{"url": host.url}]}},
            "secret_env": SECRET_ENV,
            "health_interval_s": 3600,
            "callback_url": url,
        }
        return settings_for(db, adapter_dir(config_dir, remote), "gateway-1", public_base_url=url)

    gateway = GatewayServer(gateway_settings)
    gateway.start()
    env = {
        "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_CURSOR_SECRET": CURSOR_SECRET,
        "FORECOURT_ADAPTER_CONFIG_DIR": str(config_dir),
        "FORECOURT_LOG_LEVEL": "WARNING",
        SECRET_ENV: SECRET,
    }
    try:
        yield Server(base_url=gateway.base_url, env=env), host, db
    finally:
        gateway.stop()
        host.server.stop()
        patch.undo()


async def _records(db: Path) -> list[tuple[str, str]]:
    store = open_store_url(f"sqlite+aiosqlite:///{db}")
    try:
        async with store.read() as uow:
            page = await uow.audit.page(MOTOR, limit=500)
    finally:
        await store.close()
    wanted = ("knowledge.search_inventory", "inventory.search")
    return sorted((r.action, r.surface) for r in page if r.action in wanted)


_FIRST: dict[str, Any] = {}


@pytest.mark.parametrize("name", DOORS)
async def test_inventory_search_in_words_answers_the_same_through_every_door_with_knowledge_remote(
    remote_knowledge, template, name
):
    server, host, db = remote_knowledge
    calls = host.host.calls
    before = await _records(db)
    answer = await door(name, server).call(
        "knowledge.search_inventory", QUERY, dealership_id=TOYOTA, key=template[1]["crm"]
    )
    assert answer.ok, answer.code
    assert answer.output["items"]
    assert host.host.calls == calls + 1
    found = (answer.output["filters"], answer.output["total"], [item["id"] for item in answer.output["items"]])
    _FIRST.setdefault("found", found)
    assert found == _FIRST["found"]  # the same vehicles on every door (MCP shows each in its own, shorter view)
    surface = {"rest": "rest", "stdio": "stdio"}.get(name, "mcp")
    deadline = time.monotonic() + 10
    while True:  # the gateways' audit writers flush every 50 ms (a bounded wait)
        after = await _records(db)
        added = [r for r in after if after.count(r) > before.count(r)]
        if ("knowledge.search_inventory", surface) in added or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    grown = {r: after.count(r) - before.count(r) for r in set(after)}
    assert grown.get(("knowledge.search_inventory", surface)) == 1
    assert grown.get(("inventory.search", "workflow")) == 1  # the nested search, in the HTTP gateway
