"""The model tests' rig: the real app (``create_app``) on a private copy of a demo database, its adapter
configuration pointing at loopback fakes of Vertex AI, Triton and an OpenAI-compatible server."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import yaml

from fakes.anthropic import FakeAnthropic
from fakes.customizer import FakeCustomizer
from fakes.huggingface import FakeInferenceEndpoint
from fakes.openai import FakeOpenAI
from fakes.triton import FakeTriton
from fakes.vertex import FakeVertex
from forecourt.bootstrap import Services, create_app
from forecourt.demo import load_demo
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.gateway.base import Invocation, Outcome, Principal
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async

MOTOR = "demo-motor-group"
PEPPER = "model-tests-pepper-0123456789"
DEMO_NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
NIM_KEY = "nvapi-test-key-0123456789"
NIM_KEY_ENV = "FC_TEST_NIM_API_KEY"
ANTHROPIC_KEY = "sk-ant-test-0123456789"
ANTHROPIC_KEY_ENV = "FC_TEST_ANTHROPIC_API_KEY"
HF_TOKEN = "hf_test_0123456789"
HF_TOKEN_ENV = "FC_TEST_HF_TOKEN"
KEY_SPECS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "crm": (MOTOR, "crm-agent", {}),
    "crm_leads_only": (MOTOR, "crm-agent", {"scopes": ("amcp:leads:read",)}),
    "crm_models_read": (MOTOR, "crm-agent", {"scopes": ("amcp:models:read",)}),
    "admin": (MOTOR, "ops-admin", {}),
}


async def build_template(path: Path) -> dict[str, str]:
    """Migrate, load the demo tenants (small inventory) and create the API keys."""
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=4, now=DEMO_NOW)
        service = ApiKeyService(store, PEPPER, MemoryRevocationList())
        return {
            name: (await service.create(company, member, name=name, **kwargs)).key
            for name, (company, member, kwargs) in KEY_SPECS.items()
        }
    finally:
        await store.close()


@dataclass
class Fakes:
    """The running fake runtimes."""

    vertex: FakeVertex
    triton: FakeTriton
    openai: FakeOpenAI
    nim: FakeOpenAI
    customizer: FakeCustomizer
    anthropic: FakeAnthropic
    huggingface: FakeInferenceEndpoint

    def all(self) -> tuple[Any, ...]:
        """Every fake."""
        return (self.vertex, self.triton, self.openai, self.nim, self.customizer, self.anthropic, self.huggingface)


def adapter_files(directory: Path, fakes: Fakes, *, triton_url: str | None = None, **overrides: dict[str, Any]) -> Path:
    """Operator adapter files (``adapter_config_dir``) pointing at the fakes; ``overrides`` merge per adapter.

    ``triton_url``: the Triton server the NVIDIA adapter uses (default: the fake).
    """
    directory.mkdir(parents=True, exist_ok=True)
    sa_file = directory / "vertex-sa.json"
    sa_file.write_text(json.dumps(fakes.vertex.service_account_info()), encoding="utf-8")
    configs: dict[str, dict[str, Any]] = {
        "vertex": {
            "project": "demo-project",
            "location": "us-central1",
            "base_url": fakes.vertex.base_url,
            "api_version": "v1",
            "default_model": "gemini-1.5-pro",
            "models": ["gemini-1.5-pro", "gemini-1.5-flash"],
            "timeout_s": 5,
            "concurrency": 8,
            "credentials": {"type": "google", "service_account_file": str(sa_file)},
        },
        "nvidia": {
            "backend": "triton",
            "triton": {"url": triton_url or fakes.triton.url, "default_model": "add_sub"},
            "nim": {"base_url": fakes.nim.base_url},
            "customizer": {"base_url": fakes.customizer.url},
            "default_model": "meta/llama-3.1-8b-instruct",
            "models": ["meta/llama-3.1-8b-instruct", "nvidia/nv-embedqa-e5-v5"],
            "timeout_s": 5,
            "concurrency": 8,
            "credentials": {"type": "secret", "env": NIM_KEY_ENV, "kind": "bearer"},
        },
        "openai": {
            "base_url": fakes.openai.base_url,
            "default_model": "llama3.1",
            "models": ["llama3.1", "nomic-embed-text"],
            "timeout_s": 5,
            "concurrency": 8,
            "credentials": {"type": "none"},
        },
        "anthropic": {
            "base_url": fakes.anthropic.base_url,
            "default_model": "claude-sonnet-4-6",
            "models": ["claude-sonnet-4-6", "claude-haiku-4-5"],
            "max_tokens": 512,
            "timeout_s": 30,  # the SDK is imported inside the first call's deadline
            "concurrency": 8,
            "credentials": {"type": "secret", "env": ANTHROPIC_KEY_ENV, "kind": "bearer"},
        },
        "huggingface": {
            "base_url": fakes.huggingface.url,
            "endpoints": {},
            "default_model": "meta-llama/Llama-3.1-8B-Instruct",
            "models": ["meta-llama/Llama-3.1-8B-Instruct", "BAAI/bge-small-en-v1.5"],
            "timeout_s": 30,
            "concurrency": 8,
            "credentials": {"type": "secret", "env": HF_TOKEN_ENV, "kind": "bearer"},
        },
    }
    for adapter, extra in overrides.items():
        configs.setdefault(adapter, {}).update(extra)
    for adapter, config in configs.items():
        (directory / f"{adapter}.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return directory


class Rig:
    """A running app with an HTTP client (through ``httpx.ASGITransport``)."""

    def __init__(self, services: Services, client: httpx.AsyncClient, keys: dict[str, str]) -> None:
        self.services = services
        self.client = client
        self.keys = keys

    @property
    def gateway(self) -> Any:
        return self.services.gateway

    async def rest(self, action: str, payload: Mapping[str, Any], *, key: str = "crm") -> httpx.Response:
        """POST a seed-001 envelope to ``/mcp/{action}``."""
        body = {
            "id": "mcp-req:1",
            "caller": {"sessionId": "s-1"},
            "action": {"type": "model.invoke", "name": action, "version": "v1"},
            "payload": dict(payload),
        }
        headers = {"Authorization": f"Bearer {self.keys[key]}"}
        return await self.client.post(f"/mcp/{action}", json=body, headers=headers)

    async def invoke(self, action: str, payload: Mapping[str, Any], *, key: str = "crm") -> Outcome:
        """Call ``Gateway.invoke`` with an API key, as a surface would."""
        from forecourt.gateway.base import Credentials

        inv = Invocation(action=action, payload=payload, credentials=Credentials(bearer=self.keys[key]))
        return await self.gateway.invoke(inv)

    async def operator(self, action: str, payload: Mapping[str, Any]) -> Outcome:
        """Run an admin action as the operator (what ``forecourt admin ...`` does)."""
        principal = Principal(method="internal", company_id=payload["company_id"], member_id=None, subject="operator")
        return await self.gateway.invoke(Invocation(action=action, payload=payload, surface="cli", principal=principal))

    async def audit_actions(self) -> list[str]:
        """The actions of the audit records written so far, oldest first."""
        assert await self.services.audit.flush()
        async with self.services.store.transaction() as uow:
            return [r.action for r in await uow.audit.page(MOTOR, limit=500)]


async def start_rig(template_db: Path, keys: dict[str, str], directory: Path, config_dir: Path, **settings: Any) -> Rig:
    """A fresh app on a copy of the template database."""
    db = directory / "forecourt.db"
    shutil.copyfile(template_db, db)
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{db}",
        "api_key_pepper": PEPPER,
        "instance_name": "models-test-1",
        "audit_flush_interval_s": 0.05,
        "adapter_config_dir": config_dir,
        "drain_timeout_s": 1.0,
    }
    values.update(settings)
    app = create_app(Settings(**values))
    services: Services = app.state.services
    await services.start()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://forecourt.test")
    return Rig(services, client, keys)


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The ``status.error`` of a response envelope."""
    error: dict[str, Any] = response.json()["status"]["error"]
    return error


class Clock:
    """A wall clock tests move by hand."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
