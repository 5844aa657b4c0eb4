"""Feature repositories reached through the unit of work, and the store's bulk and push-config factories.

Every test runs on SQLite and PostgreSQL (see conftest). The features' own suites (tests/knowledge,
tests/workflows, tests/upstream, tests/named_queries, tests/aap) exercise them end to end; these pin the
store-level contract the features rely on.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from a2a.server.context import ServerCallContext
from a2a.types import TaskPushNotificationConfig

from forecourt.domain.errors import InvalidQueryParams
from forecourt.domain.named_queries import parse_definition
from forecourt.domain.upstreams import UpstreamSpec
from forecourt.domain.workflows import RunRecord
from forecourt.errors import ForecourtError
from forecourt.store import SqlStore
from forecourt.store.views import ReadOnlyStore

from .factories import DEALER, OTHER_DEALER, T0, vehicle

COMPANY = "c1"


async def test_bulk_load_writes_batches_skips_stored_vehicles_and_reports_progress(store: SqlStore) -> None:
    seen: list[int] = []
    written = await store.bulk_load_vehicles((vehicle(n) for n in range(1, 8)), batch_size=3, progress=seen.append)
    again = await store.bulk_load_vehicles([vehicle(n, price=1) for n in range(1, 4)], dealership_id=DEALER)
    async with store.transaction() as uow:
        count = await uow.inventory.count(DEALER)
        stored = await uow.inventory.get(DEALER, vehicle(1).id)
        events = await uow.outbox.list_after(0, 100)
    assert (written, again, count) == (7, 3, 7)
    assert seen == [3, 6, 7]
    assert stored is not None
    assert stored.price == vehicle(1).price  # already stored: left as it was
    assert events == []  # bulk data writes no change events


async def test_bulk_load_for_one_dealership_refuses_another_dealerships_vehicle(store: SqlStore) -> None:
    with pytest.raises(ForecourtError) as caught:
        await store.bulk_load_vehicles([vehicle(1, dealership_id=OTHER_DEALER)], dealership_id=DEALER)
    assert caught.value.code == "invalid_params"
    with pytest.raises(ForecourtError) as refused:
        await ReadOnlyStore(store).bulk_load_vehicles([vehicle(1)])
    assert refused.value.code == "internal_error"


async def test_workflow_runs_are_written_only_by_the_writer_that_read_the_latest_revision(store: SqlStore) -> None:
    run = RunRecord(
        id="run-1",
        company_id=COMPANY,
        dealership_id=DEALER,
        workflow_id="wf",
        version=1,
        status="running",
        state="{}",
        created_at=T0,
        updated_at=T0,
    )
    async with store.transaction() as uow:
        await uow.workflows.insert_run(run)
        first = await uow.workflows.save_run(run)
        stale = await uow.workflows.save_run(run)  # still revision 1: another writer already moved on
        stored = await uow.workflows.get_run("run-1")
        first_turn = await uow.workflows.next_in_rotation(DEALER, "sales")
        second_turn = await uow.workflows.next_in_rotation(DEALER, "sales")
    assert (first, stale) == (True, False)
    assert stored is not None
    assert stored.revision == 2
    assert (first_turn, second_turn) == (1, 2)


async def test_workflow_definitions_are_numbered_one_past_the_latest_version(store: SqlStore) -> None:
    fields = {"company_id": COMPANY, "workflow_id": "wf", "process_id": "p", "name": "W", "digest": "d", "bpmn": "<x/>"}
    async with store.transaction() as uow:
        first = await uow.workflows.add_definition(**fields, created_by=None, now=T0)
        second = await uow.workflows.add_definition(**fields, created_by=None, now=T0 + timedelta(seconds=1))
    async with store.transaction() as uow:
        latest = await uow.workflows.get_definition(COMPANY, "wf", None)
        listed = await uow.workflows.list_definitions(COMPANY)
    assert (first.version, second.version) == (1, 2)
    assert latest == second
    assert [d.version for d in listed] == [1, 2]


async def test_upstream_definitions_round_trip_per_company(store: SqlStore) -> None:
    spec = UpstreamSpec(id="gh", url="https://mcp.example.com/mcp", namespace="gh")
    async with store.transaction() as uow:
        created = await uow.upstreams.upsert(COMPANY, spec, operator=False, now=T0)
        listed = await uow.upstreams.list(COMPANY)
        others = await uow.upstreams.list("another-company")
    assert created is True
    assert [(r.key, r.spec, r.operator_managed) for r in listed] == [(f"{COMPANY}/gh", spec, False)]
    assert others == []


async def test_named_queries_run_scoped_to_one_dealership_and_check_parameters(store: SqlStore) -> None:
    query = parse_definition(
        {
            "id": "stock_count",
            "base": "vehicles",
            "aggregates": [{"fn": "count", "as": "units"}],
        }
    )
    await store.bulk_load_vehicles([vehicle(1), vehicle(2), vehicle(3, dealership_id=OTHER_DEALER)])
    async with store.transaction() as uow:
        assert await uow.named_queries.upsert(COMPANY, query, T0) is True
        stored = await uow.named_queries.get(COMPANY, "stock_count")
        assert stored is not None
        uow.named_queries.check(stored, {}, now=T0)
        with pytest.raises(InvalidQueryParams):
            uow.named_queries.check(stored, {"nope": 1}, now=T0)
        result = await uow.named_queries.run(stored, {}, dealership_id=DEALER, now=T0, timezone="UTC")
    assert result.rows == [{"units": 2}]
    assert [c["name"] for c in result.columns] == ["units"]


async def test_aap_subscriptions_and_push_configs_live_in_the_database(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.aap_records.subscribe(["lead-1"], "task-1", DEALER, T0)
        await uow.aap_records.set_cursor("router", 7)
    async with store.transaction() as uow:
        tasks = await uow.aap_records.tasks_for("lead-1")
        cursor = await uow.aap_records.cursor("router")
    push = store.push_config_store(lambda ctx: str(ctx.state.get("dealership_id")))
    ctx = ServerCallContext(state={"dealership_id": DEALER})
    await push.set_info("task-1", TaskPushNotificationConfig(url="https://buyer.example/hook"), ctx)
    configs = await store.push_config_store(lambda ctx: DEALER).get_info_for_dispatch("task-1")
    assert (tasks, cursor) == (["task-1"], 7)
    assert [c.url for c in configs] == ["https://buyer.example/hook"]
