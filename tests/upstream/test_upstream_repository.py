"""The upstream registry table behaves the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from forecourt.adapters.upstream import UpstreamSpec
from forecourt.demo import load_demo
from forecourt.store import open_store_url, upgrade_async

NOW = datetime(2026, 3, 2, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


async def test_upstream_definitions_are_stored_per_company_and_replaced_in_place(database_url: str) -> None:
    await upgrade_async(database_url)
    store = open_store_url(database_url)
    try:
        await load_demo(store, vehicles_per_dealership=1, now=NOW)
        spec = UpstreamSpec(id="gh", url="https://mcp.example.com/mcp", namespace="gh")
        async with store.transaction() as uow:
            repo = uow.upstreams
            assert await repo.upsert("demo-motor-group", spec, operator=False, now=NOW) is True
            changed = spec.model_copy(update={"timeout_s": 5.0})
            assert await repo.upsert("demo-motor-group", changed, operator=True, now=NOW) is False
        async with store.transaction() as uow:
            repo = uow.upstreams
            mine = await repo.list("demo-motor-group")
            theirs = await repo.list("demo-bay-autos")
            assert await repo.delete("demo-motor-group", "gh") is True
            assert await repo.get("demo-motor-group", "gh") is None
    finally:
        await store.close()
    assert [r.key for r in mine] == ["demo-motor-group/gh"]
    assert mine[0].spec.timeout_s == 5.0
    assert mine[0].operator_managed is True
    assert theirs == []
