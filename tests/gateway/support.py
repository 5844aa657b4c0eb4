"""Helpers of the gateway tests: one migrated SQLite file with the demo tenants and API keys, copied per test.

Each test gets its own copy of the database and its own app (``create_app(settings)``), so tests never
share state, while the expensive part (migrations, demo data, key hashing) is paid once.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from forecourt.bootstrap import Services, create_app
from forecourt.contract import Action, ActionType, AdapterResult, ExecutionContext
from forecourt.demo import load_demo
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async
from forecourt.store.base import Store

MOTOR = "demo-motor-group"
BAY = "demo-bay-autos"
TOYOTA = "demo-toyota-sf"
HONDA = "demo-honda-oak"
BAY_SJ = "demo-bay-sj"
PEPPER = "gateway-tests-pepper-0123456789"
CURSOR_SECRET = "gateway-tests-cursor-secret-0123"
DEMO_NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)

# name -> (company, member, create kwargs)
KEY_SPECS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "crm": (MOTOR, "crm-agent", {}),
    "crm_read": (MOTOR, "crm-agent", {"scopes": ("amcp:leads:read", "amcp:inventory:read")}),
    "crm_toyota": (MOTOR, "crm-agent", {"dealership_ids": (TOYOTA,)}),
    "crm_expired": (MOTOR, "crm-agent", {"expires_at": datetime(2020, 1, 1, tzinfo=UTC)}),
    "shopper": (MOTOR, "shopper-agent", {}),
    "admin": (MOTOR, "ops-admin", {}),
    "bay": (BAY, "bay-crm-agent", {}),
}


def base_settings(db_path: Path, **overrides: Any) -> Settings:
    """Settings for one test app on ``db_path``."""
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{db_path}",
        "api_key_pepper": PEPPER,
        "cursor_secret": CURSOR_SECRET,
        "instance_name": "gw-test-1",
        "audit_flush_interval_s": 0.05,
    }
    values.update(overrides)
    return Settings(**values)


async def build_template(path: Path) -> dict[str, str]:
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=12, now=DEMO_NOW)
        service = ApiKeyService.from_settings(base_settings(path), store, MemoryRevocationList())
        # The expired key is created by a service whose clock is in the past.
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


def envelope(
    payload: dict[str, Any] | None = None,
    *,
    claim_action: str | None = None,
    agent_id: str | None = None,
    company: str | None = None,
    trace_id: str | None = None,
    allow_side_effects: bool | None = None,
    request_id: str = "req-1",
) -> dict[str, Any]:
    """A seed-001 request envelope."""
    body: dict[str, Any] = {"id": request_id, "payload": payload or {}}
    caller: dict[str, Any] = {"sessionId": "sess-1"}
    if agent_id is not None:
        caller["agentId"] = agent_id
    if trace_id is not None:
        caller["traceId"] = trace_id
    body["caller"] = caller
    if claim_action is not None:
        body["action"] = {"type": "tool.run", "name": claim_action, "version": "v1"}
    if company is not None:
        body["security"] = {"auth": {"method": "apiKey"}, "companyContext": {"companyId": company}}
    if allow_side_effects is not None:
        body["meta"] = {"priority": "normal", "allowSideEffects": allow_side_effects}
    return body


class Rig:
    """A running app on a private database copy, with an HTTP client and span capture."""

    def __init__(
        self, services: Services, client: httpx.AsyncClient, keys: dict[str, str], spans: InMemorySpanExporter
    ):
        self.services = services
        self.client = client
        self.keys = keys
        self.spans = spans

    @property
    def gateway(self) -> Any:
        return self.services.gateway

    async def call(
        self,
        action: str,
        payload: dict[str, Any] | None = None,
        *,
        key: str | None = "crm",
        headers: dict[str, str] | None = None,
        **env: Any,
    ) -> httpx.Response:
        """POST an envelope to ``/mcp/{action}``; ``key`` names one of the template's keys (or is a raw token)."""
        sent = dict(headers or {})
        if key is not None:
            sent["Authorization"] = f"Bearer {self.keys.get(key, key)}"
        return await self.client.post(f"/mcp/{action}", json=envelope(payload, **env), headers=sent)

    async def audit(self, company: str | None = None) -> list[Any]:
        """Every audit record written so far (after flushing the writer), oldest first."""
        assert await self.services.audit.flush()
        async with self.services.store.transaction() as uow:
            if company is not None:
                return await uow.audit.page(company, limit=5000)
            records = []
            for c in (MOTOR, BAY):
                records.extend(await uow.audit.page(c, limit=5000))
            return records

    async def gateway_keys(self, company: str) -> list[Any]:
        """The company's API key records (for prefixes)."""
        async with self.services.store.transaction() as uow:
            return list(await uow.tenancy.list_api_keys(company))

    async def audit_count(self) -> int:
        """All audit records, including unauthenticated ones (no company)."""
        assert await self.services.audit.flush()
        async with self.services.store.transaction() as uow:
            return await uow.audit.count()

    async def audit_rows(self) -> list[dict[str, Any]]:
        """Every audit row, including those of unauthenticated callers (no company), oldest first."""
        assert await self.services.audit.flush()
        path = self.services.settings.database_url.split("///", 1)[1]
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute("SELECT * FROM audit_records ORDER BY occurred_at, id").fetchall()
        return [dict(r) for r in rows]


def use_test_tracer(services: Services) -> InMemorySpanExporter:
    """Give the gateway a tracer of its own that records every span in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    services.gateway.tracer = provider.get_tracer("forecourt.gateway.test")
    return exporter


Prepare = Callable[[Store], Awaitable[None]]


async def start_rig(
    template: Template, directory: Path, *, prepare: Prepare | None = None, db: Path | None = None, **overrides: Any
) -> Rig:
    """Copy the template (or use ``db``), let ``prepare`` change it, then build the app and start its services."""
    db = db or template.copy_to(directory)
    settings = base_settings(db, **overrides)
    if prepare is not None:
        store = open_store_url(settings.database_url)
        try:
            await prepare(store)
        finally:
            await store.close()
    app = create_app(settings)
    services: Services = app.state.services
    spans = use_test_tracer(services)
    await services.start()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://forecourt.test")
    return Rig(services, client, template.keys, spans)


async def stop_rig(rig: Rig) -> None:
    """Close the client and the services (flushing audit)."""
    await rig.client.aclose()
    await rig.services.close()


def agent_id(company: str, member: str) -> str:
    """The seed's agent id of a demo member."""
    return f"profiles/demo/companies/{company}/team/{member}"


def error_code(response: httpx.Response) -> str:
    """The error code of a response envelope."""
    body = response.json()
    return str(body["status"]["error"]["code"])


def later(days: int) -> datetime:
    """``days`` after the demo clock."""
    return DEMO_NOW + timedelta(days=days)


Handler = Callable[[Mapping[str, Any], ExecutionContext], Awaitable[Any]]


@dataclass
class FuncAdapter:
    """An adapter that runs one coroutine function (test actions)."""

    id: str
    handler: Handler

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        return AdapterResult(output=await self.handler(payload, context), result_type="test.result")


async def _noop(payload: Mapping[str, Any], context: ExecutionContext) -> Any:
    return {"ok": True}


def register_action(
    services: Services,
    name: str,
    handler: Handler = _noop,
    *,
    adapter: str | None = None,
    action_type: ActionType = "tool.run",
    properties: dict[str, Any] | None = None,
    **fields: Any,
) -> Action:
    """Add a test action (with its own adapter) to the app's catalogue."""
    props = {"dealership_id": {"type": "string"}, **(properties or {})}
    action = Action(
        name=name,
        type=action_type,
        title=name,
        description=name,
        input_schema={"type": "object", "properties": props, "additionalProperties": False},
        output_schema=None,
        adapter=adapter or f"adapter-{name}",
        scope=fields.pop("scope", "amcp:inventory:read"),
        **fields,
    )
    services.catalogue.add(action)
    services.catalogue.add_adapter(FuncAdapter(action.adapter, handler))
    return action


async def set_policy(store: Store, company: str, **fields: Any) -> None:
    """Replace the company's default policy with one carrying ``fields``."""
    from forecourt.domain.tenancy import Policy

    async with store.transaction() as uow:
        await uow.tenancy.upsert_policy(Policy(id=f"{company}-default", company_id=company, name="default", **fields))
