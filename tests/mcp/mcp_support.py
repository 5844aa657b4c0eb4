"""Helpers of the MCP tests: a demo database with API keys built once, and the real app on a loopback port.

The app runs under uvicorn in a background thread (its own event loop), so the SDK's client drives it over
real sockets exactly as an MCP host would.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
TOYOTA = "demo-toyota-sf"
HONDA = "demo-honda-oak"
BAY_SJ = "demo-bay-sj"
PEPPER = "mcp-tests-pepper-0123456789abcdef"
CURSOR_SECRET = "mcp-tests-cursor-secret-01234567"
DEMO_NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)

KEY_SPECS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "crm": (MOTOR, "crm-agent", {}),
    "crm_read": (MOTOR, "crm-agent", {"scopes": ("amcp:leads:read", "amcp:inventory:read", "amcp:service:read")}),
    "crm_toyota": (MOTOR, "crm-agent", {"dealership_ids": (TOYOTA,)}),
    "crm_expired": (MOTOR, "crm-agent", {"expires_at": datetime(2020, 1, 1, tzinfo=UTC)}),
    "bay": (BAY, "bay-crm-agent", {}),
    "all": (MOTOR, "ops-admin", {}),
    "llm": (MOTOR, "llm-agent", {}),
    "crm_service_key": (MOTOR, "crm-agent", {"toolset": "service"}),
}
"""``crm`` is the demo CRM agent (toolset ``crm``); ``all`` is a member without a toolset (every tool); ``llm`` a
CRM agent whose member setting asks for LLM-safe tool names."""


def settings_for(db_path: Path, **overrides: Any) -> Settings:
    """Settings for one test app on ``db_path``."""
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{db_path}",
        "api_key_pepper": PEPPER,
        "cursor_secret": CURSOR_SECRET,
        "instance_name": "mcp-test-1",
        "audit_flush_interval_s": 0.05,
        "events_poll_interval_s": 0.05,
        "log_json": False,
    }
    values.update(overrides)
    return Settings(**values)


async def build_template(path: Path) -> dict[str, str]:
    """Migrate ``path``, load the demo tenants (small inventories) and create the test API keys."""
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=30, now=DEMO_NOW)
        async with store.transaction() as uow:
            crm = await uow.tenancy.get_member(MOTOR, "crm-agent")
            assert crm is not None
            await uow.tenancy.upsert_member(crm.model_copy(update={"id": "llm-agent", "tool_names": "llm"}))
        service = ApiKeyService(store, PEPPER, MemoryRevocationList())
        past = ApiKeyService(store, PEPPER, MemoryRevocationList(), now=lambda: datetime(2019, 1, 1, tzinfo=UTC))
        keys: dict[str, str] = {}
        for name, (company, member, kwargs) in KEY_SPECS.items():
            maker = past if "expires_at" in kwargs else service
            keys[name] = (await maker.create(company, member, name=name, **kwargs)).key
        return keys
    finally:
        await store.close()


class Template:
    """The prepared database file and the API keys in it."""

    def __init__(self, path: Path, keys: dict[str, str]) -> None:
        self.path = path
        self.keys = keys

    def copy_to(self, directory: Path) -> Path:
        """A private copy of the database for one test."""
        target = directory / "forecourt.db"
        shutil.copyfile(self.path, target)
        return target


class LiveServer:
    """The Forecourt app under uvicorn on a loopback port, in a thread with its own event loop."""

    def __init__(self, settings_factory: Callable[[str], Settings]) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.settings = settings_factory(self.base_url)
        self.app = create_app(self.settings)
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"{self.base_url}/mcp"

    @property
    def services(self) -> Any:
        return self.app.state.services

    @property
    def surface(self) -> Any:
        """The running McpSurface (read-only use from tests: it lives on the server's loop)."""
        for route in self.app.routes:
            if getattr(route, "path", None) == "/mcp":
                return route.app.surface
        raise AssertionError("no /mcp route")

    @property
    def surface_direct(self) -> Any:
        """The direct path of the running MCP endpoint (``surfaces/mcp/direct.py``)."""
        for route in self.app.routes:
            if getattr(route, "path", None) == "/mcp":
                return route.app.direct
        raise AssertionError("no /mcp route")

    async def start(self) -> None:
        self.thread.start()
        await wait_for(lambda: self.server.started, 15.0)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


async def wait_for(predicate: Callable[[], Any], timeout_s: float = 5.0) -> None:
    """Poll ``predicate`` until it is true (bounded: fails after ``timeout_s``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


def http_client(token: str | None = None, **headers: str) -> httpx2.AsyncClient:
    """An httpx2 client (the SDK's HTTP library) sending ``Authorization: Bearer <token>``."""
    sent = dict(headers)
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(30, read=60))


def mcp_client(url: str, hc: httpx2.AsyncClient, mode: str, **kwargs: Any) -> Client:
    """The SDK's client over Streamable HTTP in ``mode`` ("legacy" or "2026-07-28")."""
    return Client(streamable_http_client(url, http_client=hc), mode=mode, **kwargs)  # type: ignore[arg-type]


Handler = Callable[[Any], Awaitable[None]]


def error_of(result: Any) -> dict[str, Any]:
    """The AutomotiveMCP error body of a tool error result (JSON text content)."""
    import json

    assert result.is_error
    body: dict[str, Any] = json.loads(result.content[0].text)
    return body["error"]
