"""Audit records written off the request path, in batches, and never lost.

Records wait in memory until a batch is written. A failed write (database restart, lock, network)
keeps the batch and retries with backoff; :meth:`AuditWriter.close` flushes what is left before the
process exits, so N invocations always become N records. With a journal (:mod:`.audit_journal`) each
record is also on disk before its call is answered, so ``kill -9`` or a database outage loses none:
:meth:`AuditWriter.recover` replays what a dead process left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime

from forecourt.gateway.audit_journal import AuditJournal
from forecourt.gateway.audit_record import new_audit_id
from forecourt.gateway.telemetry import Metrics
from forecourt.store.base import AuditRecord, Store

logger = logging.getLogger(__name__)


class AuditWriter:
    """Buffers audit records and writes them in batches from a background task."""

    def __init__(
        self,
        store: Store,
        metrics: Metrics | None = None,
        *,
        batch_size: int = 200,
        flush_interval_s: float = 0.5,
        max_backoff_s: float = 5.0,
        on_written: Callable[[int], None] | None = None,
        journal: AuditJournal | None = None,
    ) -> None:
        self._store = store
        self.journal = journal
        self._metrics = metrics
        self._batch_size = batch_size
        self._interval = flush_interval_s
        self._max_backoff = max_backoff_s
        self._pending: deque[AuditRecord] = deque()
        self._in_flush = 0  # of the pending records, how many the flush under way is writing
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._on_written = on_written
        self.written = 0

    async def settle(self) -> None:
        """Return once every record queued so far is on disk (the journal's shared fsync; at once without one)."""
        if self.journal is not None:
            await self.journal.sync()

    def record(self, rec: AuditRecord) -> None:
        """Queue one record; with a journal it is written there (on disk after :meth:`settle`)."""
        if self.journal is not None:
            try:
                self.journal.append(rec)
            except OSError:  # a full or failing disk must not fail the call; the record stays queued
                logger.warning("audit journal append failed; record kept in memory only")
        self._pending.append(rec)
        if self._metrics is not None:
            self._metrics.audit_buffered.set(len(self._pending))
        if len(self._pending) - self._in_flush >= self._batch_size:
            self._wake.set()

    def record_rejected(self, *, surface: str, action: str, status: int, error_code: str, processed_by: str) -> None:
        """Queue the record of a request refused before any front door parsed it (no caller, no arguments)."""
        self.record(
            AuditRecord(
                id=new_audit_id(),
                company_id=None,
                dealership_id=None,
                member_id=None,
                action=action[:100],
                action_type="-",
                args_digest="-",
                args_redacted={},
                result_class="rejected",
                status_code=status,
                error_code=error_code,
                duration_ms=0.0,
                trace_id=uuid.uuid4().hex,
                surface=surface,
                processed_by=processed_by,
                occurred_at=datetime.now(UTC),
            )
        )

    @property
    def pending(self) -> int:
        """Records not yet written."""
        return len(self._pending)

    def start(self) -> None:
        """Start the background flusher (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="forecourt-audit-writer")

    async def _run(self) -> None:
        backoff = 0.05
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._wake.wait()
            self._wake.clear()
            ok = await self._flush_once()
            if ok:
                backoff = 0.05
                continue
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self._max_backoff)

    async def recover(self) -> int:
        """Write the records that dead processes left in the journal folder, then delete their segments."""
        if self.journal is None:
            return 0
        recovered = 0
        try:
            for path, records in self.journal.orphans():
                for start in range(0, len(records), self._batch_size):
                    async with self._store.transaction() as uow:
                        await uow.audit.add_many(records[start : start + self._batch_size])
                path.unlink(missing_ok=True)
                recovered += len(records)
        except Exception:  # the database is down: the segments stay for the next start
            logger.warning("audit journal recovery deferred: the database is unavailable")
        if recovered:
            logger.info("recovered %d audit records from the journal", recovered)
        return recovered

    async def _flush_once(self) -> bool:
        """Write the records pending when it starts, in batches; False when a write failed (records are kept).

        Records queued while the batches are being written wait for the next flush (the interval, or a full
        batch): under steady load a flush that chased them would write a record or two per transaction.
        """
        async with self._lock:
            if self.journal is not None and self._pending:
                self.journal.rotate()  # what arrives during the writes goes to a new segment
            remaining = self._in_flush = len(self._pending)  # exactly the records of the rotated segments
            try:
                await self._write(remaining)
            except Exception:  # any storage failure: keep the records not written, retry later
                logger.warning("audit batch write failed; %d records kept for retry", len(self._pending))
                if self._metrics is not None:
                    self._metrics.audit_write_failures.inc()
                return False
            finally:
                self._in_flush = 0
            if self.journal is not None:
                self.journal.drained()
        return True

    async def _write(self, remaining: int) -> None:
        """Write the oldest ``remaining`` pending records in batches, each taken off the queue once stored."""
        while remaining:
            batch = [self._pending[i] for i in range(min(self._batch_size, remaining))]
            async with self._store.transaction() as uow:
                await uow.audit.add_many(batch)
            for _ in batch:
                self._pending.popleft()
            remaining -= len(batch)
            self._in_flush = remaining
            self.written += len(batch)
            if self._metrics is not None:
                self._metrics.audit_written.inc(len(batch))
                self._metrics.audit_buffered.set(len(self._pending))
            if self._on_written is not None:
                self._on_written(len(batch))

    async def flush(self, *, attempts: int = 50, backoff_s: float = 0.1) -> bool:
        """Write everything pending (and what arrives meanwhile), retrying a failing store up to ``attempts`` times."""
        failures = 0
        while self._pending and failures < attempts:
            if not await self._flush_once():
                await asyncio.sleep(min(backoff_s * (2**failures), self._max_backoff))
                failures += 1
        return not self._pending

    async def close(self, timeout_s: float = 10.0) -> None:
        """Stop the flusher and write what is left (bounded by ``timeout_s``)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self.flush()
        if self.journal is not None:
            self.journal.close(drained=not self._pending)
        if self._pending:
            where = "kept in the journal for the next start" if self.journal is not None else "lost"
            logger.error("audit writer closed with %d records unwritten (%s)", len(self._pending), where)
