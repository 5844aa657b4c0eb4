"""The vector store's repository on each backend: company isolation, dealership scope, ranking, replace, delete."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import numpy as np
import pytest

from forecourt.demo.tenants import COMPANIES, DEALERSHIPS, PROFILE
from forecourt.store import SqlStore, create_engine, upgrade_async
from forecourt.store.sql.sqlite_vec import register_auto_extension
from forecourt.store.sql.vectors import SqlVectorRepository
from forecourt.store.vectors import VectorRecord, VectorScope

NOW = datetime(2026, 3, 4, 18, 0, tzinfo=UTC)
MOTOR, BAY = COMPANIES[0].id, COMPANIES[1].id
MODEL = "test-model"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of each kind."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[SqlStore]:
    """An empty migrated database of each kind with the demo companies."""
    register_auto_extension()
    url = database_url
    await upgrade_async(url)
    made = SqlStore(create_engine(url, pool_size=2))
    async with made.transaction() as uow:
        await uow.tenancy.upsert_profile(PROFILE)
        for company in COMPANIES:
            await uow.tenancy.upsert_company(company)
        for dealership in DEALERSHIPS:
            await uow.tenancy.upsert_dealership(dealership)
    try:
        yield made
    finally:
        await made.close()


def _unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def _record(vid: str, company: str, vector: np.ndarray, dealership: str | None = None) -> VectorRecord:
    return VectorRecord(
        id=vid,
        company_id=company,
        dealership_id=dealership,
        model=MODEL,
        dimensions=int(vector.shape[0]),
        vector=vector,
        text_sha256="0" * 64,
        text=None,
        tokens=3,
        source={"uri": vid},
        created_by="tester",
        created_at=NOW,
    )


async def test_search_ranks_by_cosine_within_one_company_and_dealership(store: SqlStore) -> None:
    async with store.transaction() as uow:
        repo: SqlVectorRepository = uow.vectors  # type: ignore[assignment]
        await repo.put(_record("vec_a", MOTOR, _unit(1, 0, 0), "demo-toyota-sf"))
        await repo.put(_record("vec_b", MOTOR, _unit(1, 1, 0), "demo-toyota-sf"))
        await repo.put(_record("vec_c", MOTOR, _unit(0, 0, 1), "demo-honda-oak"))
        await repo.put(_record("vec_x", BAY, _unit(1, 0, 0)))
        query = _unit(1, 0.1, 0)
        company_wide = await repo.search(VectorScope(MOTOR, MODEL), query, 10)
        one_rooftop = await repo.search(VectorScope(MOTOR, MODEL, "demo-honda-oak"), query, 10)
        backend = await repo.backend()
    assert [vid for vid, _ in company_wide] == ["vec_a", "vec_b", "vec_c"]
    assert company_wide[0][1] == pytest.approx(float(query @ _unit(1, 0, 0)), abs=1e-5)
    assert [vid for vid, _ in one_rooftop] == ["vec_c"]
    assert backend in ("sqlite-vec", "exact-scan", "pgvector")


async def test_the_exact_scan_ranks_like_the_sql_ranking(store: SqlStore) -> None:
    rng = np.random.default_rng(7)
    async with store.transaction() as uow:
        repo: SqlVectorRepository = uow.vectors  # type: ignore[assignment]
        for i in range(40):
            await repo.put(_record(f"vec_{i:02d}", MOTOR, _unit(*rng.normal(size=16))))
        query = _unit(*rng.normal(size=16))
        ranked = await repo.search(VectorScope(MOTOR, MODEL), query, 5)
        scanned = await repo._exact_scan(VectorScope(MOTOR, MODEL), query, 5)
    assert [vid for vid, _ in ranked] == [vid for vid, _ in scanned]
    assert [round(s, 4) for _, s in ranked] == [round(s, 4) for _, s in scanned]


async def test_reads_and_deletes_never_cross_companies_and_put_replaces(store: SqlStore) -> None:
    async with store.transaction() as uow:
        repo = uow.vectors
        await repo.put(_record("vec_1", MOTOR, _unit(1, 0)))
        await repo.put(_record("vec_1", MOTOR, _unit(0, 1)))
        assert await repo.get(BAY, "vec_1") is None
        assert not await repo.delete(BAY, "vec_1")
        found = await repo.get(MOTOR, "vec_1")
        assert found is not None
        assert np.allclose(found.vector, _unit(0, 1))
        assert await repo.delete(MOTOR, "vec_1")
        assert await repo.get(MOTOR, "vec_1") is None
