"""Helpers of the upstream federation tests: a demo database, the real app on loopback, real upstream processes."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from forecourt.bootstrap import create_app
from forecourt.demo import load_demo
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async

MOTOR = "demo-motor-group"
BAY = "demo-bay-autos"
PEPPER = "upstream-tests-pepper-0123456789abcdef"
SERVER_SCRIPT = Path(__file__).with_name("upstream_server.py")
UPSTREAM_SCOPES = ("amcp:upstream:read", "amcp:upstream:write")
FED_KEY = "fed"
"""A key of the CRM agent with the workflows toolset: small enough that the upstream tools are listed."""
KEY_SPECS = {"crm": (MOTOR, "crm-agent"), "bay": (BAY, "bay-crm-agent"), "admin": (MOTOR, "ops-admin")}


async def build_template(path: Path) -> dict[str, str]:
    """Migrate, load the demo, grant the agents the upstream scopes, create API keys."""
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=5, now=datetime(2026, 3, 2, tzinfo=UTC))
        async with store.transaction() as uow:
            for company, member_id in KEY_SPECS.values():
                member = await uow.tenancy.get_member(company, member_id)
                assert member is not None
                scopes = tuple(sorted({*member.scopes, *UPSTREAM_SCOPES}))
                await uow.tenancy.upsert_member(member.model_copy(update={"scopes": scopes}))
        service = ApiKeyService(store, PEPPER, MemoryRevocationList())
        keys = {name: (await service.create(c, m, name=name)).key for name, (c, m) in KEY_SPECS.items()}
        # The CRM toolset is near the tool budget on its own, so its upstream tools wait behind find_tools
        # (test_upstream_tool_budget.py); a key of the small workflows toolset lists them (FED_KEY).
        keys[FED_KEY] = (await service.create(MOTOR, "crm-agent", name=FED_KEY, toolset="workflows")).key
        return keys
    finally:
        await store.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_for(predicate: Callable[[], Any], timeout_s: float = 10.0) -> None:
    """Poll ``predicate`` (sync or async) until it is truthy; bounded."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


class UpstreamProcess:
    """``upstream_server.py http PORT`` in a subprocess (killable and restartable on the same port)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = env

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def spawn(self) -> None:
        env = {**os.environ, **self.env} if self.env else None
        self.proc = subprocess.Popen([sys.executable, str(SERVER_SCRIPT), "http", str(self.port)], env=env)

    async def start(self) -> None:
        self.spawn()

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return True
            except OSError:
                return False

        await wait_for(listening, 20.0)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None


class LiveServer:
    """The Forecourt app under uvicorn on a loopback port, in a thread with its own event loop."""

    def __init__(self, db: Path, **overrides: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        values: dict[str, Any] = {
            "database_url": f"sqlite+aiosqlite:///{db}",
            "api_key_pepper": PEPPER,
            "public_base_url": self.base_url,
            "instance_name": "upstream-test-1",
            "audit_flush_interval_s": 0.05,
            "events_poll_interval_s": 0.05,
            "allow_private_targets": True,
            "log_json": False,
        }
        values.update(overrides)
        self.settings = Settings(**values)
        self.app = create_app(self.settings)
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def hub(self) -> Any:
        return self.app.state.services.upstreams

    async def start(self) -> None:
        self.thread.start()
        await wait_for(lambda: self.server.started, 15.0)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    async def admin(self, method: str, path: str, key: str, body: Any = None) -> httpx.Response:
        """Call the admin API of demo-motor-group."""
        async with httpx.AsyncClient(base_url=self.base_url, timeout=30) as client:
            return await client.request(
                method, f"/admin/v1/companies/{MOTOR}{path}", json=body, headers={"Authorization": f"Bearer {key}"}
            )


def copy_template(template: Path, directory: Path) -> Path:
    target = directory / "forecourt.db"
    shutil.copyfile(template, target)
    return target


def mcp_client(url: str, key: str, **kwargs: Any) -> tuple[httpx2.AsyncClient, Client]:
    """An SDK client (legacy era) with a bearer key; enter both."""
    hc = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=60))
    return hc, Client(streamable_http_client(url, http_client=hc), mode="legacy", **kwargs)
