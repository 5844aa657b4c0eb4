"""A gateway and one remote adapter host on loopback, both real uvicorn servers on one database (as in production,
where the hosts of the knowledge, workflows and upstreams families share the gateways' database): the gateway's
``remote.yaml`` sends the family to the host, and the host sends its nested calls back to the gateway."""

from __future__ import annotations

import asyncio
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import yaml

from fakes.server import LoopbackServer
from forecourt.bootstrap import Services, create_app
from forecourt.cli.adapter_host import AdapterHost, create_host_app
from forecourt.demo import load_demo
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async
from forecourt.store.base import AuditRecord

MOTOR = "demo-motor-group"
BAY = "demo-bay-autos"
TOYOTA = "demo-toyota-sf"
PEPPER = "remote-family-tests-pepper-0123456789"
CURSOR_SECRET = "remote-family-tests-cursor-0123456"
SECRET = "remote-family-tests-host-secret-0123456789"
SECRET_ENV = "FC_TEST_REMOTE_FAMILY_SECRET"
DEMO_NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
KEY_SPECS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "crm": (MOTOR, "crm-agent", {}),
    # May run workflows and read leads, but not change them: a workflow step that updates a lead must fail.
    "crm_no_lead_writes": (
        MOTOR,
        "crm-agent",
        {"scopes": ("amcp:workflow:write", "amcp:leads:read", "amcp:inventory:read", "amcp:service:read")},
    ),
    # May ask knowledge in words, but not search the inventory it would search.
    "crm_knowledge_only": (MOTOR, "crm-agent", {"scopes": ("amcp:knowledge:read",)}),
    "admin": (MOTOR, "ops-admin", {}),
}


async def build_template(path: Path) -> dict[str, str]:
    """Migrate, load the demo tenants (small inventory) and create the API keys."""
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=6, now=DEMO_NOW)
        service = ApiKeyService(store, PEPPER, MemoryRevocationList())
        return {
            name: (await service.create(company, member, name=name, **kwargs)).key
            for name, (company, member, kwargs) in KEY_SPECS.items()
        }
    finally:
        await store.close()


def settings_for(db: Path, config_dir: Path, name: str, **more: Any) -> Settings:
    """One process's settings on the shared database file."""
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{db}",
        "api_key_pepper": more.pop("pepper", PEPPER),
        "cursor_secret": CURSOR_SECRET,
        "instance_name": name,
        "audit_flush_interval_s": 0.05,
        "events_poll_interval_s": 0.05,
        "drain_timeout_s": 1.0,
        "adapter_config_dir": config_dir,
        "allow_private_targets": True,
        "log_json": False,
    }
    values.update(more)
    return Settings(**values)


class GatewayServer:
    """The Forecourt app under uvicorn on a loopback port (bound first: its address is its nested-call callback)."""

    def __init__(self, settings: Callable[[str], Settings]) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.app = create_app(settings(self.base_url))
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:  # a bounded wait for the listener
            assert self.thread.is_alive(), "gateway did not start"
            assert time.monotonic() < deadline, "gateway did not start in time"
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


class HostServer:
    """``forecourt adapters serve --family F`` on a loopback port."""

    def __init__(self, settings: Settings, family: str, secret: str = SECRET) -> None:
        self.app = create_host_app(settings, family=family, region=None, secret=secret)
        self.server = LoopbackServer(self.app)
        self.server.server.config.lifespan = "on"

    @property
    def url(self) -> str:
        return self.server.base_url

    @property
    def host(self) -> AdapterHost:
        host: AdapterHost = self.app.state.host
        return host


@dataclass
class Pair:
    """A gateway with one family on one host; calls go through the gateway's REST envelope."""

    gateway: GatewayServer
    host: HostServer
    keys: dict[str, str]
    db: Path

    async def rest(self, action: str, payload: Mapping[str, Any], *, key: str = "crm") -> httpx.Response:
        """POST a seed-001 envelope to the gateway's ``/mcp/{action}``."""
        body = {"id": "req-1", "caller": {"sessionId": "s-1"}, "payload": dict(payload)}
        headers = {"Authorization": f"Bearer {self.keys[key]}"}
        async with httpx.AsyncClient(base_url=self.gateway.base_url, timeout=60) as client:
            return await client.post(f"/mcp/{action}", json=body, headers=headers)

    async def result(self, action: str, payload: Mapping[str, Any], *, key: str = "crm") -> Any:
        """The output of a call that must succeed."""
        response = await self.rest(action, payload, key=key)
        assert response.status_code == 200, response.text
        return response.json()["result"]["output"]

    async def audit(self, trace_id: str, company: str = MOTOR, *, count: int) -> list[AuditRecord]:
        """The gateway's audit records of one trace, once ``count`` of them are written (bounded wait)."""
        store = open_store_url(f"sqlite+aiosqlite:///{self.db}")
        try:
            deadline = time.monotonic() + 10
            while True:
                async with store.read() as uow:
                    page = await uow.audit.page(company, limit=500)
                found = [r for r in page if r.trace_id == trace_id]
                if len(found) >= count or time.monotonic() > deadline:
                    return sorted(found, key=lambda r: r.occurred_at)
                await asyncio.sleep(0.05)
        finally:
            await store.close()


def adapter_dir(directory: Path, remote: Mapping[str, Any] | None = None) -> Path:
    """Operator adapter files: the hashing embedder (no model to load), and ``remote.yaml`` when given."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "knowledge.yaml").write_text(yaml.safe_dump({"embedder": "hashing"}), encoding="utf-8")
    if remote is not None:
        (directory / "remote.yaml").write_text(yaml.safe_dump(dict(remote)), encoding="utf-8")
    return directory


@contextmanager
def remote_pair(
    template: tuple[Path, dict[str, str]], tmp_path: Path, family: str, pepper: str = PEPPER, **gateway: Any
) -> Iterator[Pair]:
    """A gateway whose ``family`` runs on one host, on a private copy of the template (``SECRET_ENV`` must be set;
    ``pepper``: the one the template's keys were made with)."""
    db = tmp_path / "forecourt.db"
    shutil.copyfile(template[0], db)
    host_settings = settings_for(db, adapter_dir(tmp_path / "host-adapters"), "adapter-host-1", pepper=pepper)
    host = HostServer(host_settings, family)
    host.server.start()
    try:
        remote = {
            "families": {family: {"hosts": [{"url": host.url}]}},
            "secret_env": SECRET_ENV,
            "health_interval_s": 3600,
        }
        config_dir = adapter_dir(tmp_path / "gateway-adapters", remote)
        server = GatewayServer(
            lambda url: settings_for(db, config_dir, "gateway-1", public_base_url=url, pepper=pepper, **gateway),
        )
        server.start()
        try:
            yield Pair(server, host, template[1], db)
        finally:
            server.stop()
    finally:
        host.server.stop()
