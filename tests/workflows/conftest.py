"""A migrated SQLite file with the demo tenants and API keys, built once per session and copied per test.

``rig`` builds the real services (``build_services``) on the copy and calls actions through
``Gateway.invoke`` with an API key, exactly as a front door would.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from forecourt.bootstrap import Services, build_services
from forecourt.demo import load_demo
from forecourt.errors import ForecourtError
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.gateway.base import Credentials, Invocation
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async

MOTOR = "demo-motor-group"
BAY = "demo-bay-autos"
TOYOTA = "demo-toyota-sf"
HONDA = "demo-honda-oak"
PEPPER = "workflow-tests-pepper-0123456789"
CURSOR_SECRET = "workflow-tests-cursor-secret-012"
DEMO_NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)

KEY_SPECS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "crm": (MOTOR, "crm-agent", {}),
    # May run workflows and read leads, but not change them: a workflow step that updates a lead must fail.
    "crm_no_lead_writes": (
        MOTOR,
        "crm-agent",
        {"scopes": ("amcp:workflow:write", "amcp:leads:read", "amcp:inventory:read", "amcp:service:read")},
    ),
    "admin": (MOTOR, "ops-admin", {}),
    "bay": (BAY, "bay-crm-agent", {}),
}


def settings_for(db_path: Path, **overrides: Any) -> Settings:
    """Settings of one app instance on ``db_path``."""
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{db_path}",
        "api_key_pepper": PEPPER,
        "cursor_secret": CURSOR_SECRET,
        "instance_name": "replica-a",
        "audit_flush_interval_s": 0.05,
        "drain_timeout_s": 1.0,
    }
    values.update(overrides)
    return Settings(**values)


async def _build_template(path: Path) -> dict[str, str]:
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=8, now=DEMO_NOW)
        service = ApiKeyService.from_settings(settings_for(path), store, MemoryRevocationList())
        return {
            name: (await service.create(company, member, name=name, **kwargs)).key
            for name, (company, member, kwargs) in KEY_SPECS.items()
        }
    finally:
        await store.close()


@dataclass
class Template:
    """The prepared database and its API keys."""

    path: Path
    keys: dict[str, str]


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with API keys, built once per session."""
    path = tmp_path_factory.mktemp("workflow-template") / "template.db"
    return Template(path, asyncio.run(_build_template(path)))


@dataclass
class Rig:
    """One app instance (services) on a private copy of the demo database."""

    services: Services
    keys: dict[str, str]
    db_path: Path
    extra: list[Services] = field(default_factory=list)

    async def invoke(
        self, action: str, payload: dict[str, Any], *, key: str = "crm", services: Services | None = None
    ) -> Any:
        """Call ``action`` through the gateway with the named API key; returns the output."""
        target = services or self.services
        outcome = await target.gateway.invoke(
            Invocation(action=action, payload=payload, credentials=Credentials(bearer=self.keys[key]), surface="rest")
        )
        return outcome.output

    async def error(
        self, action: str, payload: dict[str, Any], *, key: str = "crm", services: Services | None = None
    ) -> ForecourtError:
        """Call ``action`` and return the error it fails with."""
        with pytest.raises(ForecourtError) as info:
            await self.invoke(action, payload, key=key, services=services)
        return info.value

    async def replica(self, name: str) -> Services:
        """Another app instance on the same database file."""
        other = build_services(settings_for(self.db_path, instance_name=name))
        other.gateway.clock = lambda: DEMO_NOW
        await other.start()
        self.extra.append(other)
        return other


@pytest.fixture
async def rig(template: Template, tmp_path: Path) -> AsyncIterator[Rig]:
    """Services on a private copy of the demo database."""
    db_path = tmp_path / "forecourt.db"
    shutil.copyfile(template.path, db_path)
    services = build_services(settings_for(db_path))
    # Demo data is anchored at DEMO_NOW (a Monday, 07:00 in San Francisco); so is the gateway's clock.
    services.gateway.clock = lambda: DEMO_NOW
    await services.start()
    rig = Rig(services=services, keys=template.keys, db_path=db_path)
    try:
        yield rig
    finally:
        for other in rig.extra:
            await other.close()
        await services.close()
