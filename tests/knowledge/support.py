"""Test helpers: a demo database (built once per session, copied per test) and an app on it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from forecourt.bootstrap import Services, create_app
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
PEPPER = "knowledge-tests-pepper-0123456789"
DEMO_NOW = datetime(2026, 3, 4, 18, 0, tzinfo=UTC)  # a Wednesday
KEY_SPECS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "crm": (MOTOR, "crm-agent", {}),
    "crm_toyota": (MOTOR, "crm-agent", {"dealership_ids": (TOYOTA,)}),
    "crm_inventory_only": (MOTOR, "crm-agent", {"scopes": ("amcp:inventory:read",)}),
    "admin": (MOTOR, "ops-admin", {}),
    "bay": (BAY, "bay-crm-agent", {}),
    "shopper": (MOTOR, "shopper-agent", {}),
}


def settings_for(db: Path) -> Settings:
    """Settings of a test app on ``db``."""
    return Settings(
        database_url=f"sqlite+aiosqlite:///{db}",
        api_key_pepper=PEPPER,
        cursor_secret="knowledge-tests-cursor-secret-01",
        instance_name="knowledge-test",
        audit_flush_interval_s=0.05,
    )


@dataclass
class Template:
    """The prepared demo database and its API keys."""

    path: Path
    keys: dict[str, str]


async def build_template(path: Path) -> Template:
    """Migrate, load the demo (documents and named queries included) and create API keys."""
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=30, now=DEMO_NOW)
        service = ApiKeyService.from_settings(settings_for(path), store, MemoryRevocationList())
        await _prefill_default_vectors(store)
        keys = {}
        for name, (company, member, kwargs) in KEY_SPECS.items():
            keys[name] = (await service.create(company, member, name=name, **kwargs)).key
    finally:
        await store.close()
    return Template(path, keys)


async def _prefill_default_vectors(store: Any) -> None:
    """Vectors of the default embedder for the demo documents, once per session (each test's copy has them)."""
    from forecourt.adapters.knowledge.embedders import EmbedderRegistry
    from forecourt.adapters.knowledge.service import ensure_vectors

    embedder = EmbedderRegistry().configured("auto")
    if embedder is None or embedder.model == "forecourt-hash-1024":
        return
    for dealership in (TOYOTA, HONDA):  # the rooftops the tests query
        await ensure_vectors(store, dealership, embedder, cache_scope="-", now=DEMO_NOW)


class App:
    """An app on a private copy of the template, driven through httpx's ASGI transport."""

    def __init__(self, services: Services, client: httpx.AsyncClient, keys: dict[str, str]) -> None:
        self.services = services
        self.client = client
        self.keys = keys

    async def call(self, action: str, payload: dict[str, Any], *, key: str = "crm") -> httpx.Response:
        """POST a seed-001 envelope to ``/mcp/{action}``."""
        body = {"id": "req-1", "caller": {"sessionId": "s-1"}, "payload": payload}
        headers = {"Authorization": f"Bearer {self.keys[key]}"}
        return await self.client.post(f"/mcp/{action}", json=body, headers=headers)

    async def admin(self, method: str, path: str, body: Any = None, *, key: str = "admin") -> httpx.Response:
        """Call the admin API under ``/admin/v1/companies/{MOTOR}``."""
        headers = {"Authorization": f"Bearer {self.keys[key]}"}
        url = f"/admin/v1/companies/{MOTOR}{path}"
        return await self.client.request(method, url, json=body, headers=headers)


async def start_app(template: Template, directory: Path) -> App:
    """Copy the template and start an app on the copy."""
    db = directory / "forecourt.db"
    shutil.copyfile(template.path, db)
    app = create_app(settings_for(db))
    services: Services = app.state.services
    await services.start()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://forecourt.test")
    return App(services, client, template.keys)


async def stop_app(app: App) -> None:
    """Close the client and the services."""
    await app.client.aclose()
    await app.services.close()
