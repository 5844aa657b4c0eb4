"""The workflow tables on SQLite and PostgreSQL, and a run continued by a second replica on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from forecourt.adapters.workflow.errors import RunConflict
from forecourt.adapters.workflow.repository import RunRecord, WorkflowRepository
from forecourt.bootstrap import Services, build_services
from forecourt.demo import load_demo
from forecourt.demo.loader import DemoSize
from forecourt.demo.tenants import COMPANIES, DEALERSHIPS, PROFILE
from forecourt.errors import Conflict
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from forecourt.gateway.base import Credentials, Invocation
from forecourt.settings import Settings
from forecourt.store import open_store_url, upgrade_async
from forecourt.store.sql.store import SqlStore

from .conftest import DEMO_NOW, MOTOR, PEPPER, TOYOTA


@pytest.fixture(params=["sqlite", "postgres"])
def any_database_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of each kind."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def demo_store(any_database_url: str) -> AsyncIterator[SqlStore]:
    """A migrated store of each kind with the demo companies and dealerships (no dealer data)."""
    url = any_database_url
    await upgrade_async(url)
    store = open_store_url(url)
    assert isinstance(store, SqlStore)
    async with store.transaction() as uow:
        await uow.tenancy.upsert_profile(PROFILE)
        for company in COMPANIES:
            await uow.tenancy.upsert_company(company)
        for dealership in DEALERSHIPS:
            await uow.tenancy.upsert_dealership(dealership)
    try:
        yield store
    finally:
        await store.close()


def _run(run_id: str) -> RunRecord:
    return RunRecord(
        id=run_id,
        company_id=MOTOR,
        dealership_id=TOYOTA,
        workflow_id="wf",
        version=1,
        status="running",
        state="{}",
        created_at=DEMO_NOW,
        updated_at=DEMO_NOW,
        log=[{"event": "run.started"}],
        artifacts={"a": 1},
        lease_owner="replica-a",
        lease_expires_at=DEMO_NOW + timedelta(minutes=1),
    )


async def test_runs_round_trip_and_stale_writes_are_refused(demo_store: SqlStore) -> None:
    repository = WorkflowRepository(demo_store)
    await repository.insert_run(_run("r1"))
    first = await repository.get_run("r1")
    second = await repository.get_run("r1")
    assert first is not None
    assert second is not None
    assert first.lease_expires_at == DEMO_NOW + timedelta(minutes=1)
    assert first.artifacts == {"a": 1}

    first.status = "completed"
    await repository.save_run(first)
    with pytest.raises(RunConflict):
        await repository.save_run(second)

    stored = await repository.get_run("r1")
    assert stored is not None
    assert (stored.status, stored.revision) == ("completed", 2)
    assert await repository.resumable_runs(DEMO_NOW + timedelta(hours=1)) == []


async def test_rotation_counters_are_atomic(demo_store: SqlStore) -> None:
    repository = WorkflowRepository(demo_store)

    values = await asyncio.gather(*(repository.next_in_rotation(TOYOTA, "bdc") for _ in range(8)))

    assert sorted(values) == list(range(1, 9))
    assert await repository.next_in_rotation(TOYOTA, "other") == 1


async def test_definition_versions_count_up_per_company_and_id(demo_store: SqlStore) -> None:
    repository = WorkflowRepository(demo_store)
    common: dict[str, Any] = {"process_id": "p", "name": "P", "digest": "d", "bpmn": "<x/>", "created_by": "me"}

    one = await repository.add_definition(company_id=MOTOR, workflow_id="wf", now=DEMO_NOW, **common)
    two = await repository.add_definition(company_id=MOTOR, workflow_id="wf", now=DEMO_NOW, **common)
    other = await repository.add_definition(company_id="demo-bay-autos", workflow_id="wf", now=DEMO_NOW, **common)

    assert (one.version, two.version, other.version) == (1, 2, 1)
    latest = await repository.get_definition(MOTOR, "wf", None)
    assert latest is not None
    assert latest.version == 2
    assert [d.version for d in await repository.list_definitions(MOTOR)] == [1, 2]
    assert await repository.get_definition(MOTOR, "wf", 3) is None
    assert issubclass(RunConflict, Conflict)


@pytest.mark.postgres
async def test_a_user_task_started_on_one_replica_completes_on_another_on_postgresql(postgres_url: str) -> None:
    await upgrade_async(postgres_url)
    store = open_store_url(postgres_url)
    try:
        small = DemoSize(vehicles=2, customers=6, leads=3, repair_orders=1, service_appointments=1)
        await load_demo(store, vehicles_per_dealership=2, now=DEMO_NOW, size=small)
        settings = Settings(database_url=postgres_url, api_key_pepper=PEPPER, drain_timeout_s=1.0)
        key = (
            await ApiKeyService.from_settings(settings, store, MemoryRevocationList()).create(MOTOR, "crm-agent")
        ).key
    finally:
        await store.close()
    replicas: list[Services] = []
    for name in ("pg-a", "pg-b"):
        services = build_services(settings.model_copy(update={"instance_name": name}))
        services.gateway.clock = lambda: DEMO_NOW
        services.catalogue.remove_where(lambda a: a.name == "leads.deliver_adf")
        await services.start()
        replicas.append(services)

    async def call(services: Services, action: str, payload: dict[str, Any]) -> Any:
        inv = Invocation(action=action, payload=payload, credentials=Credentials(bearer=key), surface="rest")
        return (await services.gateway.invoke(inv)).output

    try:
        a, b = replicas
        lead = (await call(a, "leads.list", {"dealership_id": TOYOTA, "status": "new", "limit": 1}))["items"][0]
        run = await call(
            a,
            "workflow.run",
            {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead["id"]}},
        )
        done = await call(
            b,
            "workflow.complete_task",
            {
                "dealership_id": TOYOTA,
                "run_id": run["run_id"],
                "task_id": run["waiting_tasks"][0]["task_id"],
                "data": {"outcome": "contacted"},
            },
        )
    finally:
        for services in replicas:
            await services.close()

    assert run["status"] == "input_required"
    assert done["status"] == "completed"
    assert {e["replica"] for e in done["log"]} == {"pg-a", "pg-b"}
    assert done["artifacts"]["lead_status"] == "contacted"
