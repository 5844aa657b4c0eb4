"""Importer tests run on a real, migrated store: SQLite always, PostgreSQL when reachable (always in CI)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from forecourt.domain.tenancy import Company, Dealership, Profile
from forecourt.store import SqlStore, create_engine, upgrade_async

FEEDS = Path(__file__).parent.parent / "fixtures" / "feeds"
DEALER = "import-dealer"
OTHER = "import-other"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of each kind."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[SqlStore]:
    """A migrated store with two dealerships of one company."""
    await upgrade_async(database_url)
    sql_store = SqlStore(create_engine(database_url, pool_size=2))
    async with sql_store.transaction() as uow:
        await uow.tenancy.upsert_profile(Profile(id="p", name="Profile"))
        await uow.tenancy.upsert_company(Company(id="c", profile_id="p", name="Company"))
        for dealership_id in (DEALER, OTHER):
            await uow.tenancy.upsert_dealership(Dealership(id=dealership_id, company_id="c", name=dealership_id))
    try:
        yield sql_store
    finally:
        await sql_store.close()
