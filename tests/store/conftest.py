"""Fixtures for the store contract suite: every test runs once on SQLite and once on PostgreSQL.

The PostgreSQL run uses ``postgres_url`` from the top-level conftest, which fails (never skips) in CI.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from forecourt.store import SqlStore, create_engine, upgrade_async
from forecourt.store.base import Store

from .factories import tenancy_objects


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of each kind."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[SqlStore]:
    """A migrated store with a profile, a company and two dealerships (``dealer-a``, ``dealer-b``)."""
    await upgrade_async(database_url)
    sql_store = SqlStore(create_engine(database_url, pool_size=4))
    await seed_tenancy(sql_store)
    try:
        yield sql_store
    finally:
        await sql_store.close()


async def seed_tenancy(store: Store) -> None:
    """Write the shared tenancy fixtures."""
    profile, company, dealers = tenancy_objects()
    async with store.transaction() as uow:
        await uow.tenancy.upsert_profile(profile)
        await uow.tenancy.upsert_company(company)
        for dealer in dealers:
            await uow.tenancy.upsert_dealership(dealer)
