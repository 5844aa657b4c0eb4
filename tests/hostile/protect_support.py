"""Helpers of the protection tests: the hostile upstream in its own process, the app on a loopback socket."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from forecourt.bootstrap import create_app
from forecourt.domain.tenancy import Policy
from forecourt.store import open_store_url
from gateway.support import MOTOR, base_settings

HOSTILE_SCRIPT = Path(__file__).with_name("hostile_upstream.py")
UPSTREAM_SCOPES = ("amcp:upstream:read", "amcp:upstream:write")


async def wait_for(predicate: Callable[[], Any], timeout_s: float = 60.0) -> None:
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


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


class HostileUpstream:
    """``hostile_upstream.py PORT`` in a subprocess."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def spawn(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(HOSTILE_SCRIPT), str(self.port)])

    async def start(self) -> None:
        self.spawn()
        await wait_for(lambda: _listening(self.port), 20.0)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None


async def prepare_db(db: Path, *policies: Policy) -> None:
    """Give crm-agent the upstream scopes and store ``policies`` for demo-motor-group."""
    store = open_store_url(f"sqlite+aiosqlite:///{db}")
    try:
        async with store.transaction() as uow:
            member = await uow.tenancy.get_member(MOTOR, "crm-agent")
            assert member is not None
            scopes = tuple(sorted({*member.scopes, *UPSTREAM_SCOPES}))
            await uow.tenancy.upsert_member(member.model_copy(update={"scopes": scopes}))
            for policy in policies:
                await uow.tenancy.upsert_policy(policy)
    finally:
        await store.close()


class Live:
    """The Forecourt app under uvicorn on a loopback port, in a thread with its own event loop."""

    def __init__(self, db: Path, **overrides: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        values: dict[str, Any] = {
            "public_base_url": self.base_url,
            "events_poll_interval_s": 0.05,
            "allow_private_targets": True,
            "log_json": False,
        }
        values.update(overrides)
        self.settings = base_settings(db, **values)
        self.app = create_app(self.settings)
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def hub(self) -> Any:
        return self.app.state.services.upstreams

    @property
    def services(self) -> Any:
        return self.app.state.services

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

    async def call(self, action: str, key: str, payload: dict[str, Any], session: str = "sess-1") -> httpx.Response:
        """The REST envelope ``POST /mcp/{action}``."""
        body = {"id": "r-1", "caller": {"sessionId": session}, "payload": payload}
        async with httpx.AsyncClient(base_url=self.base_url, timeout=30) as client:
            return await client.post(f"/mcp/{action}", json=body, headers={"Authorization": f"Bearer {key}"})

    async def audit(self, company: str = MOTOR) -> list[Any]:
        """The company's stored audit records, read through a store of the test's own event loop.

        The app's objects (its audit writer, its store) belong to the server thread's loop: awaiting them here can
        hang. Records the gateway writes are flushed by :meth:`stop`; pinning's records are written at once.
        """
        store = open_store_url(self.settings.database_url)
        try:
            async with store.read() as uow:
                return list(await uow.audit.page(company, limit=5000))
        finally:
            await store.close()

    async def metrics(self) -> str:
        async with httpx.AsyncClient(base_url=self.base_url, timeout=30) as client:
            return (await client.get("/metrics")).text


def mcp_client(url: str, key: str, *, mode: str = "legacy") -> tuple[Any, Any]:
    """An SDK client with a bearer key (``legacy``: the 2025-11-25 handshake; ``auto``: 2026-07-28); enter both."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    hc = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=60))
    return hc, Client(streamable_http_client(url, http_client=hc), mode=mode)


async def register_hostile(live: Live, admin_key: str, hostile: HostileUpstream) -> str:
    """Register the hostile upstream as ``evil`` and wait for its tools; returns its hub key."""
    response = await live.admin("PUT", "/upstreams/evil", admin_key, {"url": hostile.url})
    assert response.status_code == 200, response.text
    key = f"{MOTOR}/evil"
    await wait_for(lambda: "evil.lookup_owner" in live.hub.tool_names(key))
    return key
