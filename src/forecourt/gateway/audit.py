"""Audit records written off the request path, in batches, and never lost.

Records wait in memory until a batch is written. A failed write (database restart, lock, network)
keeps the batch and retries with backoff; :meth:`AuditWriter.close` flushes what is left before the
process exits, so N invocations always become N records.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable

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
    ) -> None:
        self._store = store
        self._metrics = metrics
        self._batch_size = batch_size
        self._interval = flush_interval_s
        self._max_backoff = max_backoff_s
        self._pending: deque[AuditRecord] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._on_written = on_written
        self.written = 0

    def record(self, rec: AuditRecord) -> None:
        """Queue one record (never blocks, never raises)."""
        self._pending.append(rec)
        if self._metrics is not None:
            self._metrics.audit_buffered.set(len(self._pending))
        if len(self._pending) >= self._batch_size:
            self._wake.set()

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

    async def _flush_once(self) -> bool:
        """Write everything pending in batches; False when a write failed (records are kept)."""
        async with self._lock:
            while self._pending:
                batch = [self._pending[i] for i in range(min(self._batch_size, len(self._pending)))]
                try:
                    async with self._store.transaction() as uow:
                        await uow.audit.add_many(batch)
                except Exception:  # any storage failure: keep the batch, retry later
                    logger.warning("audit batch write failed; %d records kept for retry", len(self._pending))
                    if self._metrics is not None:
                        self._metrics.audit_write_failures.inc()
                    return False
                for _ in batch:
                    self._pending.popleft()
                self.written += len(batch)
                if self._metrics is not None:
                    self._metrics.audit_written.inc(len(batch))
                    self._metrics.audit_buffered.set(len(self._pending))
                if self._on_written is not None:
                    self._on_written(len(batch))
        return True

    async def flush(self, *, attempts: int = 50, backoff_s: float = 0.1) -> bool:
        """Write everything pending now, retrying a failing store up to ``attempts`` times."""
        for attempt in range(attempts):
            if await self._flush_once():
                return True
            await asyncio.sleep(min(backoff_s * (2**attempt), self._max_backoff))
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
        if self._pending:
            logger.error("audit writer closed with %d records unwritten", len(self._pending))
