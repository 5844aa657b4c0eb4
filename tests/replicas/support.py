"""Two ``forecourt serve`` processes on one PostgreSQL database and one Redis, behind the round-robin proxy."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from forecourt.demo import load_demo
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.store import open_store_url, upgrade_async
from replicas.proxy import RoundRobinProxy

MOTOR = "demo-motor-group"
TOYOTA = "demo-toyota-sf"
PEPPER = "replica-tests-pepper-0123456789abcdef"
CURSOR_SECRET = "replica-tests-cursor-secret-0123456"
DEMO_NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
NAMES = ("replica-a", "replica-b")
# name -> (company, member)
KEY_SPECS = {"crm": (MOTOR, "crm-agent"), "admin": (MOTOR, "ops-admin"), "doomed": (MOTOR, "crm-agent")}
RATE_LIMITED_ACTION = "inventory.facets"
RATE_LIMIT = 4


async def prepare_database(database_url: str) -> dict[str, str]:
    """Migrate, load the demo tenants, set a rate-limit policy and create the API keys; returns the keys."""
    from forecourt.domain.tenancy import Policy

    await upgrade_async(database_url)
    store = open_store_url(database_url)
    try:
        await load_demo(store, vehicles_per_dealership=12, now=DEMO_NOW)
        async with store.transaction() as uow:
            await uow.tenancy.upsert_policy(
                Policy(
                    id=f"{MOTOR}-default",
                    company_id=MOTOR,
                    name="default",
                    rate_limits={RATE_LIMITED_ACTION: RATE_LIMIT},
                )
            )
        service = ApiKeyService(store, PEPPER, MemoryRevocationList())
        keys: dict[str, str] = {}
        for name, (company, member) in KEY_SPECS.items():
            keys[name] = (await service.create(company, member, name=name)).key
        return keys
    finally:
        await store.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def poll(check: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> None:
    """Poll ``check`` until it holds; fails after ``timeout_s`` (a bounded wait, never a fixed sleep)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@dataclass
class Replica:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Cluster:
    """The replicas, the proxy in front of them and the API keys."""

    proxy: ProxyThread
    replicas: list[Replica]
    keys: dict[str, str]
    database_url: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.proxy.url

    def by_name(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)


def start_replica(name: str, env: dict[str, str], log_dir: Path) -> Replica:
    """``forecourt serve --port P`` as a child process (the console script of this interpreter's venv)."""
    port = free_port()
    executable = Path(sys.executable).parent / "forecourt"
    log = log_dir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(executable), "serve", "--dev", "--host", "127.0.0.1", "--port", str(port)],
            env={**os.environ, **env, "FORECOURT_INSTANCE_NAME": name},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Replica(name, port, process, log)


def wait_ready(replica: Replica, timeout_s: float = 40.0) -> None:
    """Poll ``/readyz`` until the replica answers 200 (bounded; fails early if the process exits)."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as client:
        while True:
            if replica.process.poll() is not None:
                raise AssertionError(f"{replica.name} exited: {replica.log.read_text()[-2000:]}")
            try:
                if client.get(f"{replica.url}/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{replica.name} not ready: {replica.log.read_text()[-2000:]}")
            time.sleep(0.05)  # the polling interval of a bounded wait, not a fixed delay


def require_reachable(name: str, url: str) -> None:
    """Skip outside CI when the service is down; fail in CI."""
    import pytest

    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=1.0):
            return
    except OSError:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{name} at {url} is required in CI but is not reachable")
        pytest.skip(f"{name} at {url} is not reachable; start it to run this test")


class ProxyThread:
    """The round-robin proxy on an event loop of its own (so any test's loop can use it)."""

    def __init__(self) -> None:
        self.proxy = RoundRobinProxy()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="replica-proxy")
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.proxy.start(), self.loop).result(10)

    @property
    def url(self) -> str:
        return self.proxy.url

    @property
    def counts(self) -> dict[int, int]:
        return dict(self.proxy.counts)

    @property
    def streams_opened(self) -> int:
        return self.proxy.streams_opened

    def route_to(self, upstreams: list[tuple[str, int]]) -> None:
        self.loop.call_soon_threadsafe(self.proxy.route_to, upstreams)
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), self.loop).result(5)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


def stop_replica(replica: Replica) -> None:
    if replica.process.poll() is None:
        replica.process.terminate()
        try:
            replica.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            replica.process.kill()
            replica.process.wait(timeout=5)


def replica_env(database_url: str, redis_url: str, redis_prefix: str, public_url: str) -> dict[str, str]:
    return {
        "FORECOURT_DATABASE_URL": database_url,
        "FORECOURT_REDIS_URL": redis_url,
        "FORECOURT_REDIS_PREFIX": redis_prefix,
        "FORECOURT_CURSOR_SECRET": CURSOR_SECRET,
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_LOG_LEVEL": "WARNING",
        "FORECOURT_PUBLIC_BASE_URL": public_url,
        "FORECOURT_AUDIT_FLUSH_INTERVAL_S": "0.05",
        "FORECOURT_EVENTS_POLL_INTERVAL_S": "0.05",
        "FORECOURT_MCP_SSE_PING_S": "1",
        "FORECOURT_DRAIN_TIMEOUT_S": "2",
    }
