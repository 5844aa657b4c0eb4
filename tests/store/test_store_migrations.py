"""Migrations: they build the whole schema from an empty database and match the table definitions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from forecourt.demo import load_demo
from forecourt.store import SqlStore, create_engine, upgrade, upgrade_async, upgrade_engine
from forecourt.store.migrations.versions.inventory_0002 import INDEXES as SORT_INDEXES
from forecourt.store.sql.schema import include_object, metadata

EXPECTED_TABLES = {
    "profiles",
    "companies",
    "dealerships",
    "members",
    "policies",
    "adapter_settings",
    "api_keys",
    "vehicles",
    "customers",
    "consent_grants",
    "leads",
    "repair_orders",
    "appointments",
    "service_slots",
    "trade_valuations",
    "outbox",
    "audit_records",
    "deliveries",
}


def _inspect(conn: sa.Connection) -> tuple[set[str], str | None, list[object]]:
    tables = set(sa.inspect(conn).get_table_names())
    revision = MigrationContext.configure(conn).get_current_revision()
    diff = compare_metadata(
        MigrationContext.configure(conn, opts={"compare_type": True, "include_object": include_object}), metadata
    )
    return tables, revision, diff


async def test_migrations_build_the_schema_from_an_empty_database(database_url: str) -> None:
    await upgrade_async(database_url)
    await upgrade_async(database_url)  # running again is a no-op
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            tables, revision, diff = await conn.run_sync(_inspect)
    finally:
        await engine.dispose()
    assert tables >= EXPECTED_TABLES
    assert revision is not None
    assert diff == []


async def test_synchronous_upgrade_works_inside_a_running_event_loop(database_url: str) -> None:
    upgrade(database_url)
    store = SqlStore(create_engine(database_url))
    try:
        async with store.transaction() as uow:
            assert await uow.inventory.count() == 0
    finally:
        await store.close()


def test_sqlite_file_and_its_folder_are_created_on_upgrade(tmp_path: object) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/nested/dir/forecourt.db"
    upgrade(url)
    assert (Path(str(tmp_path)) / "nested" / "dir" / "forecourt.db").exists()


async def test_an_in_memory_sqlite_database_can_be_migrated_through_its_engine() -> None:
    store = SqlStore(create_engine("sqlite+aiosqlite://"))
    try:
        await upgrade_engine(store.engine)
        async with store.transaction() as uow:
            assert await uow.outbox.last_seq() == 0
    finally:
        await store.close()


async def _with_demo_data(url: str) -> None:
    store = SqlStore(create_engine(url))
    try:
        await load_demo(store, vehicles_per_dealership=5)
    finally:
        await store.close()


def _downgrade_on(connection: sa.Connection, url: str, revision: str) -> None:
    from alembic import command

    from forecourt.store.sql.migrate import alembic_config

    cfg = alembic_config(url)
    cfg.attributes["connection"] = connection
    command.downgrade(cfg, revision)


def test_an_analysed_sqlite_database_gets_statistics_for_the_search_indexes(tmp_path: Path) -> None:
    # Statistics for every index but the new one would make the planner prefer it for filtered searches.
    url = f"sqlite+aiosqlite:///{tmp_path}/analysed.db"
    # The demo is loaded by today's code (today's columns), then the schema goes back to before the indexes.
    upgrade(url)
    asyncio.run(_with_demo_data(url))
    with sa.create_engine(f"sqlite:///{tmp_path}/analysed.db").connect() as conn:
        _downgrade_on(conn, url, "model_jobs_0002")
        conn.exec_driver_sql("ANALYZE")
        conn.commit()
    upgrade(url)
    with sa.create_engine(f"sqlite:///{tmp_path}/analysed.db").connect() as conn:
        indexes = {row[0] for row in conn.exec_driver_sql("SELECT idx FROM sqlite_stat1 WHERE tbl = 'vehicles'")}
    assert {"ix_vehicles_dealer_id_status", *SORT_INDEXES} <= indexes


def test_a_sqlite_database_without_statistics_is_not_analysed_by_an_upgrade(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/plain.db"
    upgrade(url)
    with sa.create_engine(f"sqlite:///{tmp_path}/plain.db").connect() as conn:
        tables = {row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "sqlite_stat1" not in tables
