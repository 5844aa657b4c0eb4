"""The cross-door contract with the models family remote: the same model call through the REST envelope, MCP
Streamable HTTP in both eras and MCP over stdio (its own process), against one gateway whose runtimes run on a
remote adapter host, answers the same and is audited once per call, by the gateway, with the door's surface."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml

from contract.doors import FORECOURT, Answer, Server
from forecourt.bootstrap import create_app
from forecourt.settings import Settings
from forecourt.store import open_store_url

from .support import MOTOR, PEPPER, adapter_files
from .test_remote_hosts import SECRET, SECRET_ENV, running_host

DOORS = ("rest", "mcp-legacy", "mcp-stateless", "stdio")


class _Gateway:
    def __init__(self, settings: Settings) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.app = create_app(settings.model_copy(update={"public_base_url": self.base_url}))
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:  # a bounded wait for the listener
            assert time.monotonic() < deadline, "gateway did not start"
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture(scope="module")
def remote_gateway(
    template, running_fakes, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, Any, Path]]:
    """One gateway (HTTP, and the environment for its stdio twin) with the models family on one host."""
    tmp = tmp_path_factory.mktemp("remote-doors")
    mp = pytest.MonkeyPatch()
    mp.setenv(SECRET_ENV, SECRET)
    host_dir = adapter_files(tmp / "host-adapters", running_fakes, openai={"timeout_s": 20})
    with running_host(template[0], tmp, host_dir, "us", SECRET) as host:
        gateway_dir = adapter_files(tmp / "gateway-adapters", running_fakes, openai={"timeout_s": 20})
        remote = {"families": {"models": {"hosts": [{"url": host.url, "region": "us"}]}}, "secret_env": SECRET_ENV}
        (gateway_dir / "remote.yaml").write_text(yaml.safe_dump(remote), encoding="utf-8")
        db = tmp / "gateway.db"
        shutil.copyfile(template[0], db)
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{db}",
            api_key_pepper=PEPPER,
            adapter_config_dir=gateway_dir,
            audit_flush_interval_s=0.05,
        )
        env = {
            "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "FORECOURT_API_KEY_PEPPER": PEPPER,
            "FORECOURT_ADAPTER_CONFIG_DIR": str(gateway_dir),
            "FORECOURT_LOG_LEVEL": "WARNING",
            SECRET_ENV: SECRET,
        }
        gateway = _Gateway(settings)
        gateway.start()
        try:
            yield Server(base_url=gateway.base_url, env=env), host, db
        finally:
            gateway.stop()
    mp.undo()


async def _records(db: Path, surface: str) -> list[tuple[str, int]]:
    store = open_store_url(f"sqlite+aiosqlite:///{db}")
    try:
        async with store.transaction() as uow:
            page = await uow.audit.page(MOTOR, limit=500)
    finally:
        await store.close()
    return [(r.action, r.status_code) for r in page if r.surface == surface and r.action == "openai.invokeModel"]


def _mcp_answer(result: Any) -> Answer:
    text = " ".join(getattr(part, "text", "") for part in result.content)
    if result.is_error:
        return Answer(code=text)
    return Answer(output=result.structured_content or text)


async def _call(name: str, server: Server, action: str, args: dict[str, Any], key: str) -> tuple[str, Answer]:
    """One call through door ``name`` (model actions take no dealership_id); its audit surface and answer."""
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    if name == "rest":
        async with httpx.AsyncClient(timeout=60) as http:
            reply = await http.post(
                f"{server.base_url}/mcp/{action}",
                json={"id": "req-1", "payload": args},
                headers={"Authorization": f"Bearer {key}"},
            )
        body = reply.json()
        if reply.status_code >= 400:
            return "rest", Answer(code=body["status"]["error"]["code"])
        return "rest", Answer(output=body["result"]["output"])
    if name == "stdio":
        env = {**server.env, "FORECOURT_MCP_TOKEN": key, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        params = StdioServerParameters(command=str(FORECOURT), args=["mcp", "--stdio"], env=env)
        async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
            return "stdio", _mcp_answer(await client.call_tool(action, args))
    import httpx2

    mode = "legacy" if name == "mcp-legacy" else "2026-07-28"
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as hc:
        transport = streamable_http_client(f"{server.base_url}/mcp", http_client=hc)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            return "mcp", _mcp_answer(await client.call_tool(action, args))


@pytest.mark.parametrize("name", DOORS)
async def test_a_model_call_through_every_door_runs_on_the_remote_host(remote_gateway, template, fakes, name):
    server, host, db = remote_gateway
    calls_before = host.host.calls
    surface = "rest" if name == "rest" else "stdio" if name == "stdio" else "mcp"
    records_before = len(await _records(db, surface))
    _, answer = await _call(name, server, "openai.invokeModel", {"input": "Is my Civic due?"}, template[1]["crm"])
    assert answer.ok, answer.code
    assert fakes.openai.reply in str(answer.output)
    assert host.host.calls == calls_before + 1
    found: list[tuple[str, int]] = []
    for _ in range(200):  # the gateway's audit writer flushes every 50 ms (a bounded wait, not a fixed sleep)
        found = await _records(db, surface)
        if len(found) > records_before:
            break
        await asyncio.sleep(0.05)
    assert found[records_before:] == [("openai.invokeModel", 200)]  # audited once, by the gateway
