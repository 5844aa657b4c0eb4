"""The AAP tables (subscriptions, cursors) and the SDK's push-config table, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from a2a.server.context import ServerCallContext
from a2a.types import TaskPushNotificationConfig

from forecourt.store import open_store_url, upgrade_async
from forecourt.surfaces.a2a.app import a2a_stores


async def _exercise(url: str) -> None:
    await upgrade_async(url)
    store = open_store_url(url)
    try:
        now = datetime.now(UTC)
        async with store.transaction() as uow:
            records = uow.aap_records
            await records.subscribe(["lead-1", "appt-1"], "task-1", "d1", now)
            await records.subscribe(["lead-1"], "task-1", "d1", now)  # idempotent
            await records.subscribe(["lead-1"], "task-2", "d1", now)
            assert sorted(await records.tasks_for("lead-1")) == ["task-1", "task-2"]
            assert await records.cursor("c") is None
            await records.set_cursor("c", 10)
            await records.set_cursor("c", 5)  # never moves backwards
        async with store.transaction() as uow:
            assert await uow.aap_records.cursor("c") == 10
        _, push = a2a_stores(store)
        ctx = ServerCallContext(state={"dealership_id": "d1"})
        await push.set_info("task-1", TaskPushNotificationConfig(url="https://buyer.example/hook", token="t"), ctx)
        configs = await push.get_info_for_dispatch("task-1")
        assert [c.url for c in configs] == ["https://buyer.example/hook"]
    finally:
        await store.close()


async def test_aap_records_and_push_configs_persist_on_sqlite(sqlite_url: str) -> None:
    await _exercise(sqlite_url)


@pytest.mark.postgres
async def test_aap_records_and_push_configs_persist_on_postgresql(postgres_url: str) -> None:
    await _exercise(postgres_url)
