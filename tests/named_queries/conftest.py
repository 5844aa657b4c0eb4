"""Fixtures of the named-query tests: demo data in SQLite and PostgreSQL, and the demo app."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from forecourt.actions.queries import register_named_queries
from forecourt.adapters.named_queries import NamedQueryAdapter
from forecourt.contract import Catalogue, ExecutionContext
from forecourt.demo import load_demo
from forecourt.demo.loader import DemoSize
from forecourt.gateway.base import Principal
from forecourt.settings import Settings
from forecourt.store import SqlStore, create_engine, upgrade_async
from knowledge.support import App, Template, build_template, start_app, stop_app

NOW = datetime(2026, 3, 4, 18, 0, tzinfo=UTC)  # Wednesday 10:00 in Los Angeles
SMALL = DemoSize(vehicles=20, customers=20, leads=30, repair_orders=20, service_appointments=20)


@dataclass
class Harness:
    """Runs the named-query actions as the gateway would after authorization (internal principal)."""

    store: SqlStore
    catalogue: Catalogue
    adapter: NamedQueryAdapter

    async def call(self, action: str, payload: dict[str, Any], *, dealership_id: str | None = None) -> Any:
        act = self.catalogue.get(action)
        assert act is not None
        ctx = ExecutionContext(
            action=act,
            principal=Principal(method="internal", company_id=None, member_id=None),
            dealership_id=dealership_id,
            company_id=payload.get("company_id"),
            store=self.store,
            settings=Settings(),
            now=NOW,
            trace_id="t",
        )
        return (await self.adapter.execute(payload, ctx)).output


async def _build(url: str) -> None:
    await upgrade_async(url)
    store = SqlStore(create_engine(url, pool_size=2))
    try:
        await load_demo(store, vehicles_per_dealership=20, now=NOW, size=SMALL)
    finally:
        await store.close()


@pytest.fixture(scope="session")
def sqlite_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite file with the demo data, built once and copied per test."""
    path = tmp_path_factory.mktemp("named-queries-sqlite") / "demo.db"
    asyncio.run(_build(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def postgres_demo(postgres_admin_url: str) -> Iterator[str]:
    """A PostgreSQL database with the demo data, built once; tests add only queries with their own ids."""
    name = f"forecourt_nq_{uuid.uuid4().hex[:10]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(postgres_admin_url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    url = postgres_admin_url.replace("postgresql://", "postgresql+asyncpg://").rsplit("/", 1)[0] + f"/{name}"
    try:
        asyncio.run(_build(url))
        yield url
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with the demo data, of each kind."""
    if request.param == "sqlite":
        target = tmp_path / "demo.db"
        shutil.copyfile(request.getfixturevalue("sqlite_demo"), target)
        return f"sqlite+aiosqlite:///{target}"
    url: str = request.getfixturevalue("postgres_demo")
    return url


@pytest.fixture
async def harness(database_url: str) -> AsyncIterator[Harness]:
    """The named-query actions on a database holding the demo data and the example queries."""
    store = SqlStore(create_engine(database_url, pool_size=2))
    catalogue = Catalogue()
    adapter = register_named_queries(catalogue)
    try:
        yield Harness(store, catalogue, adapter)
    finally:
        await store.close()


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The demo database with API keys, built once."""
    path = tmp_path_factory.mktemp("named-queries-template") / "template.db"
    return asyncio.run(build_template(path))


@pytest.fixture
async def app(template: Template, tmp_path: Path) -> AsyncIterator[App]:
    """A fresh app on a private copy of the template."""
    made = await start_app(template, tmp_path)
    try:
        yield made
    finally:
        await stop_app(made)
