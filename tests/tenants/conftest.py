"""Fixtures: an empty migrated store on SQLite and on PostgreSQL (PostgreSQL fails, never skips, in CI)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from forecourt.store import SqlStore, create_engine, upgrade_async

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tenants.yaml"


def example() -> dict[str, Any]:
    """examples/tenants.yaml, loaded."""
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of each kind."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[SqlStore]:
    """A migrated, empty store."""
    await upgrade_async(database_url)
    sql_store = SqlStore(create_engine(database_url, pool_size=4))
    try:
        yield sql_store
    finally:
        await sql_store.close()
