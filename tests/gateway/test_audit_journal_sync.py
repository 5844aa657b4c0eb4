"""The audit journal's shared fsync: every record is flushed before ``sync`` returns, with one fsync per group."""

from __future__ import annotations

import asyncio
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

from forecourt.gateway.audit_journal import AuditJournal
from forecourt.store.base import AuditRecord


class CountingFlush:
    """os.fsync that counts its calls, and can hold them until released (to gather waiters)."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()
        self.release.set()

    def __call__(self, fd: int) -> None:
        self.release.wait(timeout=10)
        self.calls += 1
        os.fsync(fd)


def _record(n: int) -> AuditRecord:
    return AuditRecord(
        id=f"rec-{n}",
        company_id="acme",
        dealership_id=None,
        member_id="crm",
        action="inventory.search",
        action_type="inventory.search.request",
        args_digest="0" * 64,
        args_redacted={},
        result_class="success",
        status_code=200,
        error_code=None,
        duration_ms=1.0,
        trace_id="0" * 32,
        surface="mcp",
        processed_by="test",
        occurred_at=datetime(2026, 3, 2, tzinfo=UTC),
    )


def _journal_lines(folder: Path) -> list[bytes]:
    return next(folder.glob("*.jsonl")).read_bytes().splitlines()


async def test_calls_that_finish_together_share_one_fsync_and_all_records_are_on_disk(tmp_path: Path) -> None:
    flush = CountingFlush()
    journal = AuditJournal(tmp_path, "test", flush=flush)
    journal.append(_record(0))
    flush.release.clear()
    first = asyncio.create_task(journal.sync())  # its fsync is held: the next 20 calls gather behind it
    await asyncio.sleep(0)

    async def call(n: int) -> None:
        journal.append(_record(n))
        await journal.sync()

    later = [asyncio.create_task(call(n)) for n in range(1, 21)]
    await asyncio.sleep(0)
    flush.release.set()
    await asyncio.gather(first, *later)
    assert flush.calls == 2  # one for the first record, one for the twenty that waited together
    lines = _journal_lines(tmp_path)
    assert sorted(AuditRecord.model_validate_json(line).id for line in lines) == sorted(f"rec-{n}" for n in range(21))
    journal.close(drained=True)


async def test_sync_returns_at_once_when_nothing_new_was_written(tmp_path: Path) -> None:
    flush = CountingFlush()
    journal = AuditJournal(tmp_path, "test", flush=flush)
    await journal.sync()
    journal.append(_record(1))
    await journal.sync()
    await journal.sync()
    assert flush.calls == 1
    journal.close(drained=True)


def test_a_journal_syncs_from_one_event_loop_after_another(tmp_path: Path) -> None:
    """One-shot commands run each step in a new loop: a sync begun in an old one must not be awaited."""
    flush = CountingFlush()
    journal = AuditJournal(tmp_path, "test", flush=flush)
    for n in range(3):
        journal.append(_record(n))
        asyncio.run(journal.sync())
    assert flush.calls == 3
    journal.close(drained=True)


async def test_without_fsync_the_journal_still_writes_every_record(tmp_path: Path) -> None:
    flush = CountingFlush()
    journal = AuditJournal(tmp_path, "test", fsync=False, flush=flush)
    journal.append(_record(1))
    await journal.sync()
    assert flush.calls == 0
    assert len(_journal_lines(tmp_path)) == 1
    journal.close(drained=True)


async def _one_call_then_another_in_the_next_turn(journal: AuditJournal) -> None:
    journal.append(_record(1))
    first = asyncio.create_task(journal.sync())
    await asyncio.sleep(0)  # the first call asks for a round
    await asyncio.sleep(0)  # the round begins: it takes the records so far, or waits a turn
    journal.append(_record(2))  # another call finishes in the same turn of the loop
    await asyncio.gather(first, journal.sync())


async def test_while_other_requests_are_answered_a_round_waits_a_turn_so_calls_about_to_finish_share_it(
    tmp_path: Path,
) -> None:
    flush = CountingFlush()
    journal = AuditJournal(tmp_path, "test", flush=flush, commit_siblings=2)
    journal.siblings = lambda: 3
    await _one_call_then_another_in_the_next_turn(journal)
    assert flush.calls == 1
    assert len(_journal_lines(tmp_path)) == 2
    journal.close(drained=True)


async def test_a_call_answered_alone_starts_its_round_at_once(tmp_path: Path) -> None:
    flush = CountingFlush()
    journal = AuditJournal(tmp_path, "test", flush=flush, commit_siblings=2)
    journal.siblings = lambda: 1  # one other request: below the threshold
    await _one_call_then_another_in_the_next_turn(journal)
    assert flush.calls == 2
    journal.close(drained=True)


async def test_records_whatever_their_arguments_hold_are_read_back_from_the_journal_as_written(
    tmp_path: Path,
) -> None:
    plain = _record(1).model_copy(update={"args_redacted": {"make": ["Toyota"], "limit": 20, "ratio": 0.5}})
    huge = _record(2).model_copy(update={"args_redacted": {"count": 2**70}})  # past what orjson writes
    journal = AuditJournal(tmp_path, "test", fsync=False)
    journal.append(plain)
    journal.append(huge)
    await journal.sync()
    journal.close(drained=False)
    later = AuditJournal(tmp_path, "later", fsync=False)
    (recovered,) = [records for _, records in later.orphans()]
    assert recovered == [plain, huge]
    later.close(drained=True)


def test_a_journal_line_is_byte_for_byte_what_the_records_own_dump_writes() -> None:
    from datetime import date, timedelta, timezone
    from decimal import Decimal

    from forecourt.gateway.audit_journal import _line

    plus_two = timezone(timedelta(hours=2))
    for when in (
        datetime(2026, 3, 2, 9, 30, 0, 123456, tzinfo=UTC),
        datetime(2026, 3, 2, 9, 30, tzinfo=UTC),
        datetime(2026, 3, 2, 9, 30, 0, 1000, tzinfo=UTC),
        datetime(2026, 3, 2, 9, 30, tzinfo=plus_two),
        datetime(2026, 3, 2, 9, 30, 0, 5, tzinfo=timezone(timedelta(0))),
    ):
        for args in ({"at": when, "ratio": float("nan")}, {"day": date(2026, 3, 2)}, {"price": Decimal("9.99")}):
            record = _record(1).model_copy(update={"args_redacted": args, "occurred_at": when})
            assert _line(record) == record.model_dump_json().encode() + b"\n"
