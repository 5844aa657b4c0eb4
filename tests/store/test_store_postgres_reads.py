"""PostgreSQL read units of work: each statement on its own, without BEGIN and COMMIT round trips."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from forecourt.store import SqlStore, create_engine, upgrade_async
from forecourt.store.sql.store import SqlUnitOfWork

from .conftest import seed_tenancy
from .factories import DEALER, vehicle, vin

NOW = sa.select(sa.func.transaction_timestamp())


@pytest.fixture
async def pg_store(postgres_url: str) -> AsyncIterator[SqlStore]:
    await upgrade_async(postgres_url)
    store = SqlStore(create_engine(postgres_url, pool_size=2))
    await seed_tenancy(store)
    try:
        yield store
    finally:
        await store.close()


async def _transaction_starts(store: SqlStore, reads: bool) -> tuple[object, object]:
    unit = store.read() if reads else store.transaction()
    async with unit as uow:
        assert isinstance(uow, SqlUnitOfWork)
        first = await uow.connection.scalar(NOW)
        second = await uow.connection.scalar(NOW)
    return first, second


async def test_each_statement_of_a_postgres_read_unit_of_work_is_a_transaction_of_its_own(pg_store: SqlStore) -> None:
    await _transaction_starts(pg_store, reads=True)  # the engine's first connection learns the server's isolation
    first, second = await _transaction_starts(pg_store, reads=True)
    assert first != second


async def test_a_postgres_write_unit_of_work_is_still_one_transaction_after_reads_on_its_connections(
    pg_store: SqlStore,
) -> None:
    for _ in range(3):  # the pool's connections served autocommit reads before
        await _transaction_starts(pg_store, reads=True)
    first, second = await _transaction_starts(pg_store, reads=False)
    assert first == second
    with pytest.raises(RuntimeError):
        await _write_then_fail(pg_store)
    async with pg_store.read() as uow:
        assert await uow.inventory.get_by_vin(DEALER, vin(7)) is None


async def _write_then_fail(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(7))
        raise RuntimeError("rolled back")


async def test_a_postgres_read_sees_every_write_committed_before_it(pg_store: SqlStore) -> None:
    await _transaction_starts(pg_store, reads=True)
    async with pg_store.transaction() as uow:
        await uow.inventory.upsert(vehicle(7))
    async with pg_store.read() as uow:
        found = await uow.inventory.get_by_vin(DEALER, vin(7))
    assert found is not None
