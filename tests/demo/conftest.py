"""Demo tests write to a real, migrated store: SQLite always, PostgreSQL when reachable (always in CI)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from forecourt.store import SqlStore, create_engine, upgrade_async


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of each kind."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[SqlStore]:
    """A migrated, empty store."""
    await upgrade_async(database_url)
    sql_store = SqlStore(create_engine(database_url, pool_size=2))
    try:
        yield sql_store
    finally:
        await sql_store.close()
