"""Test rig of the AAP dealer agent: a migrated demo database built once, an app per test or a live server.

``LiveServer`` runs uvicorn on a free loopback port in a background thread (its own event loop), so real
protocol clients (the a2a-sdk, Node's @a2a-js/sdk, the checker) talk to it over a socket.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from forecourt.bootstrap import Services, create_app
from forecourt.demo import load_demo
from forecourt.domain.aap_spec import SKILLS_BY_ID
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async

FIXTURES = Path(__file__).parent / "fixtures"
TOYOTA = "demo-toyota-sf"
HONDA = "demo-honda-oak"
MOTOR = "demo-motor-group"
PEPPER = "aap-tests-pepper-0123456789abcdef"
DEMO_NOW = datetime.now(UTC).replace(microsecond=0)
HEADERS = {"A2A-Version": "1.0"}


def fixture(name: str) -> dict[str, Any]:
    """A copied AAP example."""
    return dict(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def settings_for(db: Path, **overrides: Any) -> Settings:
    """Settings of a test app on ``db``."""
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{db}",
        "api_key_pepper": PEPPER,
        "cursor_secret": "aap-tests-cursor-secret-0123456789",
        "instance_name": "aap-test",
        "allow_private_targets": True,
        "audit_flush_interval_s": 0.05,
        "delivery_poll_interval_s": 0.05,
        "delivery_base_backoff_s": 0.01,
        "delivery_max_backoff_s": 0.05,
        "log_json": False,
    }
    values.update(overrides)
    return Settings(**values)


async def build_template(path: Path) -> dict[str, str]:
    """Migrate, load the demo tenants and create API keys; returns the keys by name."""
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=10, now=DEMO_NOW)
        service = ApiKeyService.from_settings(settings_for(path), store, MemoryRevocationList())
        return {
            "crm": (await service.create(MOTOR, "crm-agent", name="crm")).key,
            "shopper": (await service.create(MOTOR, "shopper-agent", name="shopper")).key,
        }
    finally:
        await store.close()


def message(skill_id: str, data: dict[str, Any], *, message_id: str = "m-1") -> dict[str, Any]:
    """An A2A Message carrying an AAP DataPart."""
    skill = SKILLS_BY_ID[skill_id]
    return {
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"data": data, "mediaType": skill.request_media_type}],
    }


def jsonrpc(skill_id: str, data: dict[str, Any], *, push: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC SendMessage request."""
    params: dict[str, Any] = {
        "message": message(skill_id, data),
        "configuration": {"acceptedOutputModes": [SKILLS_BY_ID[skill_id].response_media_type]},
    }
    if push is not None:
        params["configuration"]["taskPushNotificationConfig"] = push
    return {"jsonrpc": "2.0", "id": "req-1", "method": "SendMessage", "params": params}


class Rig:
    """An app on a private database copy with an in-process HTTP client."""

    def __init__(self, services: Services, client: httpx.AsyncClient, keys: dict[str, str]) -> None:
        self.services = services
        self.client = client
        self.keys = keys

    async def rpc(
        self, skill_id: str, data: dict[str, Any], *, dealer: str = TOYOTA, key: str | None = None, **kw: Any
    ) -> httpx.Response:
        """POST a JSON-RPC SendMessage."""
        headers = dict(HEADERS)
        if key:
            headers["Authorization"] = f"Bearer {self.keys.get(key, key)}"
        return await self.client.post(
            f"/dealers/{dealer}/a2a/jsonrpc", json=jsonrpc(skill_id, data, **kw), headers=headers
        )

    async def rest(
        self, skill_id: str, data: dict[str, Any], *, dealer: str = TOYOTA, key: str | None = None
    ) -> httpx.Response:
        """POST an HTTP+JSON message:send."""
        headers = dict(HEADERS)
        if key:
            headers["Authorization"] = f"Bearer {self.keys.get(key, key)}"
        body = {"message": message(skill_id, data)}
        return await self.client.post(f"/dealers/{dealer}/a2a/message:send", json=body, headers=headers)


async def start_rig(template: Path, keys: dict[str, str], directory: Path, **overrides: Any) -> Rig:
    """Copy the template database and start an app on it (background workers included)."""
    db = directory / "forecourt.db"
    shutil.copyfile(template, db)
    app = create_app(settings_for(db, **overrides))
    services: Services = app.state.services
    await services.start()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://forecourt.test")
    return Rig(services, client, keys)


async def stop_rig(rig: Rig) -> None:
    """Close client and services."""
    await rig.client.aclose()
    await rig.services.close()


def payload_of(response: httpx.Response) -> dict[str, Any]:
    """The AAP payload of a successful reply on either binding."""
    body = response.json()
    msg = body["result"]["message"] if "result" in body else body["message"]
    return dict(msg["parts"][0]["data"])


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The aap.error of a failed reply on either binding."""
    body = response.json()
    if "jsonrpc" in body:
        return dict(body["error"]["data"])
    return dict(body)


async def wait_for(predicate: Any, timeout_s: float = 10.0, interval_s: float = 0.02) -> Any:
    """Poll ``predicate`` (sync or async) until it returns something truthy; bounded."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(interval_s)


class LiveServer:
    """uvicorn serving an app on a free loopback port, in a background thread."""

    def __init__(self, app: Any) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.port = 0

    def start(self) -> LiveServer:
        """Start and wait (bounded) until the socket listens."""
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop and join the thread."""
        self.server.should_exit = True
        self.thread.join(timeout=20)
