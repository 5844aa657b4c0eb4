"""Outbox, audit and delivery repository contract, and the unit of work's commit/rollback behaviour."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from forecourt.domain.events import ChangeEvent, ChangeType, ResourceType
from forecourt.errors import NotFound
from forecourt.store import SqlStore
from forecourt.store.base import AuditRecord, Delivery

from .factories import DEALER, OTHER_DEALER, T0, lead, vehicle


def _event(n: int, dealership_id: str = DEALER) -> ChangeEvent:
    return ChangeEvent(
        id=f"evt-{n}",
        seq=12345,
        dealership_id=dealership_id,
        resource_type=ResourceType.LEAD,
        resource_id=f"lead-{n}",
        change_type=ChangeType.CREATED,
        status="new",
        occurred_at=T0 + timedelta(seconds=n),
        payload={"n": n, "nested": {"ok": True}},
    )


async def test_outbox_assigns_increasing_seq_in_commit_order_and_filters_by_dealership(store: SqlStore) -> None:
    async with store.transaction() as uow:
        assert await uow.outbox.last_seq() == 0
        await uow.outbox.append(_event(1))
        await uow.outbox.append(_event(2, OTHER_DEALER))
    async with store.transaction() as uow:
        await uow.outbox.append(_event(3))
        everything = await uow.outbox.list_after(0, 10)
        mine = await uow.outbox.list_after(0, 10, dealership_id=DEALER)
        tail = await uow.outbox.list_after(everything[0].seq, 1)
        last = await uow.outbox.last_seq()
    seqs = [e.seq for e in everything]
    assert [e.id for e in everything] == ["evt-1", "evt-2", "evt-3"]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 3
    assert last == seqs[-1]
    assert [e.id for e in mine] == ["evt-1", "evt-3"]
    assert [e.id for e in tail] == ["evt-2"]
    assert everything[0].model_dump(exclude={"seq"}) == _event(1).model_dump(exclude={"seq"})


async def test_outbox_seqs_between_lists_the_window_in_order_without_reading_events(store: SqlStore) -> None:
    async with store.transaction() as uow:
        for n in range(1, 5):
            await uow.outbox.append(_event(n))
    async with store.read() as uow:
        seqs = [e.seq for e in await uow.outbox.list_after(0, 10)]
        assert await uow.outbox.seqs_between(seqs[0], seqs[2]) == seqs[1:3]
        assert await uow.outbox.seqs_between(0, seqs[-1]) == seqs
        assert await uow.outbox.seqs_between(seqs[-1], seqs[-1] + 100) == []


async def test_concurrent_writers_produce_events_in_seq_order_without_gaps(store: SqlStore) -> None:
    async def write(n: int) -> None:
        async with store.transaction() as uow:
            await uow.leads.add(lead(n))

    await asyncio.gather(*(write(n) for n in range(1, 9)))
    async with store.transaction() as uow:
        events = await uow.outbox.list_after(0, 100)
    assert sorted(e.resource_id for e in events) == sorted(f"lead-{n}" for n in range(1, 9))
    assert [e.seq for e in events] == sorted(e.seq for e in events)


async def test_a_committed_write_is_visible_to_the_next_transaction(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
    async with store.transaction() as uow:
        assert await uow.inventory.get(DEALER, vehicle(1).id) is not None
        assert len(await uow.outbox.list_after(0, 10)) == 1


async def test_a_rolled_back_outbox_append_is_not_kept(store: SqlStore) -> None:
    async def append_then_fail() -> None:
        async with store.transaction() as uow:
            await uow.outbox.append(_event(1))
            raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        await append_then_fail()
    async with store.transaction() as uow:
        assert await uow.outbox.list_after(0, 10) == []


def _audit(n: int, company_id: str | None = "c1", **overrides: Any) -> AuditRecord:
    data: dict[str, Any] = {
        "id": f"aud-{n:03d}",
        "company_id": company_id,
        "dealership_id": DEALER,
        "member_id": "crm-agent",
        "action": "inventory.search",
        "action_type": "db.query",
        "args_digest": "sha256:abc",
        "args_redacted": {"filters": {"make": ["Toyota"]}, "email": "[redacted]"},
        "result_class": "ok",
        "status_code": 200,
        "error_code": None,
        "duration_ms": 3.5,
        "trace_id": f"trace-{n}",
        "surface": "mcp",
        "processed_by": "forecourt-1",
        "occurred_at": T0 + timedelta(minutes=n),
    }
    data.update(overrides)
    return AuditRecord.model_validate(data)


async def test_audit_records_page_by_time_and_after_id(store: SqlStore) -> None:
    records = [_audit(n) for n in range(1, 6)] + [_audit(9, company_id="c2"), _audit(10, company_id=None)]
    async with store.transaction() as uow:
        await uow.audit.add_many(records)
        first = await uow.audit.page("c1", limit=2)
        after = await uow.audit.page("c1", after_id=first[-1].id, limit=10)
        since = await uow.audit.page("c1", since=T0 + timedelta(minutes=4))
        assert await uow.audit.count() == 7
        assert await uow.audit.count("c1") == 5
    assert first == records[:2]
    assert [r.id for r in after] == ["aud-003", "aud-004", "aud-005"]
    assert [r.id for r in since] == ["aud-004", "aud-005"]


async def test_audit_records_with_equal_timestamps_page_without_loss(store: SqlStore) -> None:
    records = [_audit(n, occurred_at=T0) for n in range(1, 5)]
    async with store.transaction() as uow:
        await uow.audit.add_many(records)
        seen: list[str] = []
        after: str | None = None
        while batch := await uow.audit.page("c1", limit=3, after_id=after):
            seen += [r.id for r in batch]
            after = batch[-1].id
    assert seen == ["aud-001", "aud-002", "aud-003", "aud-004"]


async def test_audit_purge_deletes_only_old_records_of_one_company(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.audit.add_many([_audit(n) for n in range(1, 6)] + [_audit(1 + 100, company_id="c2")])
        purged = await uow.audit.purge_before("c1", T0 + timedelta(minutes=3))
        assert await uow.audit.count("c1") == 3
        assert await uow.audit.count("c2") == 1
    assert purged == 2


def _delivery(n: int, **overrides: Any) -> Delivery:
    data: dict[str, Any] = {
        "id": f"del-{n}",
        "kind": "adf",
        "dealership_id": DEALER,
        "target": "https://crm.example.com/adf",
        "subject_id": "lead-1" if n < 3 else "lead-2",
        "body": "<adf/>",
        "content_type": "application/xml",
        "next_attempt_at": T0 + timedelta(minutes=n),
        "created_at": T0 + timedelta(seconds=n),
    }
    data.update(overrides)
    return Delivery.model_validate(data)


async def test_deliveries_add_update_due_and_list_for_subject(store: SqlStore) -> None:
    async with store.transaction() as uow:
        for n in (1, 2, 3, 4):
            await uow.deliveries.add(_delivery(n))
        done = _delivery(1, status="delivered", attempts=1, delivered_at=T0 + timedelta(minutes=1))
        await uow.deliveries.update(done)
        await uow.deliveries.update(_delivery(2, status="retrying", attempts=1, last_error="HTTP 503"))
        due = await uow.deliveries.due(T0 + timedelta(minutes=3), 10)
        assert await uow.deliveries.has_due(T0 + timedelta(minutes=3))
        limited = await uow.deliveries.due(T0 + timedelta(minutes=10), 1)
        for_lead = await uow.deliveries.list_for("lead-1")
    assert [d.id for d in due] == ["del-2", "del-3"]
    assert [d.id for d in limited] == ["del-2"]
    assert for_lead[0] == done
    assert [d.id for d in for_lead] == ["del-1", "del-2"]


async def test_has_due_is_false_before_the_next_attempt_and_for_finished_deliveries(store: SqlStore) -> None:
    async with store.transaction() as uow:
        await uow.deliveries.add(_delivery(1))
    first_at = _delivery(1).next_attempt_at
    async with store.read() as uow:
        assert not await uow.deliveries.has_due(first_at - timedelta(seconds=1))
        assert await uow.deliveries.has_due(first_at)
    async with store.transaction() as uow:
        await uow.deliveries.update(_delivery(1, status="failed", attempts=5))
    async with store.read() as uow:
        assert not await uow.deliveries.has_due(first_at + timedelta(days=1))


async def test_updating_an_unknown_delivery_raises_not_found(store: SqlStore) -> None:
    with pytest.raises(NotFound) as caught:
        async with store.transaction() as uow:
            await uow.deliveries.update(_delivery(1))
    assert caught.value.code == "not_found"


async def test_ping_answers_true_while_open(store: SqlStore) -> None:
    assert await store.ping() is True


async def test_audit_records_read_back_as_written_whatever_their_arguments_hold(store: SqlStore) -> None:
    plain = _audit(1)
    scripted = _audit(2, args_redacted={"when": T0, "amount": Decimal("12.50"), "nested": {"at": [T0]}})
    async with store.transaction() as uow:
        await uow.audit.add_many([plain, scripted])
        await uow.audit.add_many([plain])  # already stored: skipped
    async with store.transaction() as uow:
        stored = await uow.audit.page("c1")
    assert [r.id for r in stored] == ["aud-001", "aud-002"]
    assert stored[0] == plain
    assert stored[1].args_redacted == scripted.model_dump(mode="json")["args_redacted"]
    assert stored[1].occurred_at == scripted.occurred_at


async def test_audit_arguments_with_integers_past_64_bits_and_keys_of_every_kind_read_back_as_written(
    store: SqlStore,
) -> None:
    huge = _audit(3, args_redacted={"count": 2**70, "keys": {"1": ["ü", None, 1.5]}})
    async with store.transaction() as uow:
        await uow.audit.add_many([huge])
    async with store.transaction() as uow:
        (stored,) = await uow.audit.page("c1")
    assert stored == huge


async def test_audit_batches_of_one_shape_share_one_compiled_insert_and_keep_their_own_timestamps(
    store: SqlStore,
) -> None:
    from forecourt.store.sql.context import _IGNORING_INSERTS

    first = [_audit(n, occurred_at=T0) for n in range(1, 4)]
    second = [_audit(n, occurred_at=T0 + timedelta(seconds=n)) for n in range(4, 7)]
    for batch in (first, second):
        async with store.transaction() as uow:
            await uow.audit.add_many(batch)
    dialect = store.engine.dialect
    assert [table.name for d, table, _ in _IGNORING_INSERTS if d is dialect] == ["audit_records"]
    async with store.transaction() as uow:
        stored = await uow.audit.page("c1")
    assert stored == first + second
