"""Audit: one record per invocation (allowed or denied), redacted, never lost; retention purge and SIEM export."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from forecourt.actions.admin_data import purge_all, purge_company
from forecourt.gateway.audit import AuditWriter
from forecourt.gateway.redact import digest
from forecourt.store import open_store_url
from forecourt.store.base import AuditRecord, Store

from .support import BAY, BAY_SJ, MOTOR, PEPPER, TOYOTA, Rig, Template, base_settings, set_policy, start_rig, stop_rig

MakeRig = Callable[..., Awaitable[Rig]]
EMAIL = "audited.person@example.com"
PHONE = "+14155550142"


async def test_n_invocations_allowed_or_denied_become_n_audit_records(rig: Rig) -> None:
    lead = {
        "dealership_id": TOYOTA,
        "customer": {"first_name": "Au", "last_name": "Dit", "email": EMAIL, "phone": PHONE},
    }
    calls: list[tuple[str, dict[str, Any], str | None]] = [
        ("dealer.information", {"dealership_id": TOYOTA}, "crm"),
        ("dealer.information", {"dealership_id": TOYOTA}, "crm"),
        ("leads.create", lead, "crm"),
        ("leads.create", lead, "crm_read"),
        ("leads.create", lead, None),
        ("leads.create", {**lead, "dealership_id": BAY_SJ}, "crm"),
        ("leads.create", {**lead, "unexpected": EMAIL}, "crm"),
        ("no.such.action", {"email": EMAIL}, "crm"),
        ("inventory.search", {"dealership_id": TOYOTA, "cursor": "forged"}, "crm"),
        ("inventory.get", {"dealership_id": TOYOTA, "vin": "1HGCM82633A004352"}, "crm"),
    ]
    statuses = [(await rig.call(action, payload, key=key)).status_code for action, payload, key in calls]
    assert statuses == [200, 200, 200, 403, 401, 403, 422, 404, 400, 404]
    rows = await rig.audit_rows()
    assert len(rows) == len(calls)
    assert sorted(r["status_code"] for r in rows) == sorted(statuses)
    for row in rows:
        assert EMAIL not in row["args_redacted"]
        assert PHONE not in row["args_redacted"]
        assert row["processed_by"] == "gw-test-1"
        assert row["surface"] == "rest"
        assert row["trace_id"]
    created = next(r for r in rows if r["action"] == "leads.create" and r["status_code"] == 200)
    assert (created["company_id"], created["dealership_id"], created["member_id"]) == (MOTOR, TOYOTA, "crm-agent")
    assert created["args_digest"] == digest(lead)
    assert json.loads(created["args_redacted"])["customer"] == "[redacted]"
    smuggled = next(r for r in rows if r["status_code"] == 422)
    assert json.loads(smuggled["args_redacted"])["[unexpected]"] == 1


async def test_a_company_policy_redacts_its_own_fields_in_outputs_and_audit(make_rig: MakeRig) -> None:
    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, redact_fields=("vin", "stock"))

    rig = await make_rig(prepare=prepare)
    first = await rig.call("inventory.search", {"dealership_id": TOYOTA, "limit": 1})
    vehicle = first.json()["result"]["output"]["items"][0]
    assert vehicle["vin"] == "[redacted]"
    assert vehicle["stock"] == "[redacted]"
    assert vehicle["make"] == "Toyota"
    await rig.call("inventory.get", {"dealership_id": TOYOTA, "vehicle_id": vehicle["id"]})
    rows = await rig.audit_rows()
    get_row = json.loads(rows[-1]["args_redacted"])
    assert get_row["vehicle_id"] == vehicle["id"]
    await rig.call("inventory.get", {"dealership_id": TOYOTA, "vin": "4T1BF1FK5CU000001"})
    assert json.loads((await rig.audit_rows())[-1]["args_redacted"])["vin"] == "[redacted]"


class FlakyStore:
    """Wraps a store whose transactions fail ``failures`` times (a database restart), then work."""

    def __init__(self, inner: Store, failures: int) -> None:
        self.inner = inner
        self.failures = failures
        self.attempts = 0

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise ConnectionError("database restarting")
        async with self.inner.transaction() as uow:
            yield uow


def _record(company: str, at: datetime, n: int = 0) -> AuditRecord:
    return AuditRecord(
        id=uuid.uuid4().hex,
        company_id=company,
        dealership_id=None,
        member_id="crm-agent",
        action="dealer.information",
        action_type="tool.run",
        args_digest="0" * 64,
        args_redacted={"n": n},
        result_class="ok",
        status_code=200,
        error_code=None,
        duration_ms=1.0,
        trace_id=uuid.uuid4().hex,
        surface="rest",
        processed_by="test",
        occurred_at=at,
    )


@pytest.fixture
async def store(template: Template, tmp_path: Path) -> AsyncIterator[Store]:
    db = template.copy_to(tmp_path)
    opened = open_store_url(base_settings(db).database_url)
    try:
        yield opened
    finally:
        await opened.close()


async def test_records_survive_a_database_hiccup_the_writer_retries_until_all_are_written(store: Store) -> None:
    flaky = FlakyStore(store, failures=3)
    all_written = asyncio.Event()
    written = [0]

    def on_written(count: int) -> None:
        written[0] += count
        if written[0] >= 50:
            all_written.set()

    writer = AuditWriter(
        flaky,  # type: ignore[arg-type]
        batch_size=7,
        flush_interval_s=0.01,
        max_backoff_s=0.02,
        on_written=on_written,
    )
    writer.start()
    now = datetime.now(UTC)
    try:
        for n in range(50):
            writer.record(_record(MOTOR, now, n))
        # The background writer (not close()) must get everything through once the database is back.
        await asyncio.wait_for(all_written.wait(), 10)
    finally:
        await writer.close()
    assert flaky.attempts > 3
    assert writer.pending == 0
    async with store.transaction() as uow:
        assert await uow.audit.count(MOTOR) == 50


class CallsFinishingStore:
    """Wraps a store; while its first transaction is open, ``arrive`` runs (calls finishing during a batch write)."""

    def __init__(self, inner: Store, arrive: Callable[[], None]) -> None:
        self.inner = inner
        self.arrive = arrive
        self.transactions = 0

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        self.transactions += 1
        async with self.inner.transaction() as uow:
            if self.transactions == 1:
                self.arrive()
            yield uow


async def test_records_queued_during_a_batch_write_wait_for_the_next_batch(store: Store) -> None:
    now = datetime.now(UTC)
    first_written = asyncio.Event()
    writers: list[AuditWriter] = []

    def arrive() -> None:
        for n in range(3):
            writers[0].record(_record(MOTOR, now, 100 + n))

    finishing = CallsFinishingStore(store, arrive)
    writer = AuditWriter(
        finishing,  # type: ignore[arg-type]
        batch_size=10,
        flush_interval_s=600.0,
        on_written=lambda count: first_written.set(),
    )
    writers.append(writer)
    writer.start()
    try:
        for n in range(10):  # a full batch wakes the writer
            writer.record(_record(MOTOR, now, n))
        await asyncio.wait_for(first_written.wait(), 10)
        # The three that arrived meanwhile are not chased with a transaction of their own.
        assert finishing.transactions == 1
        assert writer.pending == 3
    finally:
        await writer.close()
    assert writer.pending == 0
    async with store.transaction() as uow:
        assert await uow.audit.count(MOTOR) == 13


async def test_graceful_shutdown_writes_every_buffered_record(template: Template, tmp_path: Path) -> None:
    # A long flush interval: nothing is written during the calls, everything at shutdown.
    rig = await start_rig(template, tmp_path, audit_flush_interval_s=600.0, audit_batch_size=10_000)
    try:
        for _ in range(25):
            await rig.call("dealer.information", {"dealership_id": TOYOTA})
        assert rig.services.audit.pending == 25
    finally:
        await stop_rig(rig)
    reopened = open_store_url(rig.services.settings.database_url)
    try:
        async with reopened.transaction() as uow:
            assert await uow.audit.count(MOTOR) == 25
    finally:
        await reopened.close()


async def test_retention_purges_records_older_than_the_companys_policy(store: Store) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    await set_policy(store, MOTOR, audit_retention_days=30)
    async with store.transaction() as uow:
        await uow.audit.add_many(
            [
                _record(MOTOR, now - timedelta(days=45)),
                _record(MOTOR, now - timedelta(days=29)),
                _record(BAY, now - timedelta(days=45)),
                _record(BAY, now - timedelta(days=400)),
            ]
        )
    assert await purge_company(store, MOTOR, now=now) == 1
    async with store.transaction() as uow:
        assert (await uow.audit.count(MOTOR), await uow.audit.count(BAY)) == (1, 2)
    # The other company keeps the default (365 days).
    assert await purge_all(store, now=now) == 1
    async with store.transaction() as uow:
        assert (await uow.audit.count(MOTOR), await uow.audit.count(BAY)) == (1, 1)


# ---------------------------------------------------------------- CLI (sync tests: the CLI runs its own loop)


@pytest.fixture
def cli_db(template: Template, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A database copy the CLI is pointed at through FORECOURT_* variables (logging left to pytest)."""
    import forecourt.logs

    db = template.copy_to(tmp_path)
    monkeypatch.setattr(forecourt.logs, "_configured", True)
    monkeypatch.setenv("FORECOURT_DATABASE_URL", base_settings(db).database_url)
    monkeypatch.setenv("FORECOURT_API_KEY_PEPPER", PEPPER)
    monkeypatch.setenv("FORECOURT_LOG_LEVEL", "WARNING")
    return db


def _seed(db: Path, records: list[AuditRecord], retention_days: int | None = None) -> None:
    async def body() -> None:
        store = open_store_url(base_settings(db).database_url)
        try:
            if retention_days is not None:
                await set_policy(store, MOTOR, audit_retention_days=retention_days)
            async with store.transaction() as uow:
                await uow.audit.add_many(records)
        finally:
            await store.close()

    asyncio.run(body())


def test_audit_export_prints_the_companys_records_since_a_time_as_json_lines(cli_db: Path) -> None:
    from forecourt.cli.main import app

    base = datetime(2026, 5, 1, tzinfo=UTC)
    _seed(cli_db, [_record(MOTOR, base + timedelta(hours=h), h) for h in range(5)] + [_record(BAY, base, 99)])
    result = CliRunner().invoke(app, ["audit", "export", "--company", MOTOR, "--since", "2026-05-01T02:00:00Z"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["args_redacted"]["n"] for line in lines] == [2, 3, 4]
    assert {line["company_id"] for line in lines} == {MOTOR}
    assert {"id", "action", "status_code", "trace_id", "occurred_at", "args_digest"} <= set(lines[0])


def test_audit_export_rejects_a_since_without_an_offset(cli_db: Path) -> None:
    from forecourt.cli.main import app

    result = CliRunner().invoke(app, ["audit", "export", "--company", MOTOR, "--since", "2026-05-01T02:00:00"])
    assert result.exit_code == 2


def test_audit_purge_applies_the_companys_retention(cli_db: Path) -> None:
    from forecourt.cli.main import app

    now = datetime.now(UTC)
    _seed(cli_db, [_record(MOTOR, now - timedelta(days=10)), _record(MOTOR, now)], retention_days=7)
    result = CliRunner().invoke(app, ["audit", "purge", "--company", MOTOR])
    assert result.exit_code == 0, result.output
    assert "purged 1 audit records" in result.stdout


def test_keys_create_json_prints_a_key_that_authenticates(cli_db: Path) -> None:
    from forecourt.cli.main import app
    from forecourt.gateway.auth import build_authenticator
    from forecourt.gateway.backends.memory import MemoryRevocationList
    from forecourt.gateway.base import Credentials

    result = CliRunner().invoke(app, ["keys", "create", "--company", MOTOR, "--member", "crm-agent", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["key"].startswith("fck_")

    async def authenticate() -> Any:
        settings = base_settings(cli_db)
        store = open_store_url(settings.database_url)
        auth = build_authenticator(settings, store, MemoryRevocationList())
        try:
            return await auth.authenticate(Credentials(bearer=printed["key"]), None)
        finally:
            await auth.aclose()
            await store.close()

    principal = asyncio.run(authenticate())
    assert (principal.company_id, principal.member_id) == (MOTOR, "crm-agent")
