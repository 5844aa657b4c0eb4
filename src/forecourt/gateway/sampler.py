"""Gauges sampled off the request path: process, runtime, database pool, Redis round trip, backlogs.

One background loop per process reads them every ``metrics_sample_interval_s`` so that no call pays for them
and so that, under ``forecourt serve --workers N``, each worker writes its own values (prometheus-client's
multiprocess files) and ``/metrics`` adds them up. The event-loop lag is the lateness of the sampler's own
timer: a loop blocked by CPU work shows up here first.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import platform
import resource
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from forecourt.gateway.telemetry import Metrics, forecourt_version
from forecourt.store.base import Store

logger = logging.getLogger(__name__)

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class RuntimeSampler:
    """Samples the gauges of one process (see the module docstring).

    Args:
        metrics: Where the values go.
        store: Its pool and a ping (round trip), the outbox head and the delivery backlog.
        interval_s: Seconds between samples.
        redis_ping: One Redis round trip, when Redis is configured.
        outbox_position: The outbox ``seq`` this process's dispatcher has reached (``None`` before it starts).
        certificates: PEM certificates whose expiry to export, by kind (``server``).
    """

    def __init__(
        self,
        metrics: Metrics,
        store: Store,
        *,
        interval_s: float = 5.0,
        redis_ping: Callable[[], Awaitable[object]] | None = None,
        outbox_position: Callable[[], int | None] | None = None,
        certificates: dict[str, Path] | None = None,
    ) -> None:
        self.metrics = metrics
        self.store = store
        self.interval_s = max(interval_s, 0.05)
        self.redis_ping = redis_ping
        self.outbox_position = outbox_position
        self.certificates = certificates or {}
        self._cpu = 0.0
        self._gc = [0, 0, 0]
        self._stopping = asyncio.Event()

    def announce(self) -> None:
        """Values that never change: build info, start time, one live worker."""
        self.metrics.build_info.labels(forecourt_version(), platform.python_version()).set(1)
        self.metrics.workers.set(1)
        self.metrics.process_start_time.set(_process_start_time())
        self.metrics.draining.set(0)
        for kind, path in self.certificates.items():
            expiry = certificate_expiry(path)
            if expiry is not None:
                self.metrics.certificate_expiry.labels(kind).set(expiry)

    def stop(self) -> None:
        """End :meth:`run` after the current sample."""
        self._stopping.set()

    async def run(self) -> None:
        """Sample until stopped or cancelled (a ``services.background`` factory)."""
        self.announce()
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        while not self._stopping.is_set():
            try:
                await self.sample_once()
            except Exception:  # a metrics loop must never take the process down
                logger.warning("metrics sample failed", exc_info=True)
            _raise_if_cancelling(task)
            expected = loop.time() + self.interval_s
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval_s):
                    await self._stopping.wait()
            _raise_if_cancelling(task)
            self.metrics.event_loop_lag.observe(max(loop.time() - expected, 0.0))

    async def sample_once(self) -> None:
        """Take one sample of every gauge."""
        self._sample_process()
        self.metrics.process_caches.sync()
        self._sample_pool()
        await self._sample_database()
        if self.redis_ping is not None:
            await self._sample_redis(self.redis_ping)

    def _sample_process(self) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime
        if cpu > self._cpu:
            self.metrics.process_cpu.inc(cpu - self._cpu)
            self._cpu = cpu
        rss = _resident_bytes()
        if rss is not None:
            self.metrics.process_memory.set(rss)
        with contextlib.suppress(OSError):
            self.metrics.process_open_fds.set(len(os.listdir("/proc/self/fd")))
        for generation, stats in enumerate(gc.get_stats()):
            count = int(stats.get("collections", 0))
            if count > self._gc[generation]:
                self.metrics.gc_collections.labels(str(generation)).inc(count - self._gc[generation])
                self._gc[generation] = count

    def _sample_pool(self) -> None:
        engine: Any = getattr(self.store, "engine", None)
        pool: Any = getattr(getattr(engine, "sync_engine", None), "pool", None)
        if pool is None or not hasattr(pool, "checkedout"):
            return  # SQLite's single shared connection: no pool to report
        gauge = self.metrics.db_pool
        gauge.labels("size").set(pool.size())
        gauge.labels("checked_out").set(pool.checkedout())
        gauge.labels("idle").set(pool.checkedin())
        gauge.labels("overflow").set(max(pool.overflow(), 0))

    async def _sample_database(self) -> None:
        started = time.perf_counter()
        if not await self.store.ping():
            return
        self.metrics.db_roundtrip.observe(time.perf_counter() - started)
        async with self.store.read() as uow:
            head = await uow.outbox.last_seq()
            backlog = await uow.deliveries.backlog()
        position = self.outbox_position() if self.outbox_position is not None else None
        if position is not None:
            self.metrics.outbox_lag.set(max(head - position, 0))
        for status, count in backlog.items():
            self.metrics.delivery_backlog.labels(status).set(count)

    async def _sample_redis(self, ping: Callable[[], Awaitable[object]]) -> None:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(2.0):
                await ping()
        except Exception:  # Redis down: the gauge says so; the backends log it themselves
            self.metrics.redis_up.set(0)
            return
        self.metrics.redis_roundtrip.observe(time.perf_counter() - started)
        self.metrics.redis_up.set(1)


def _raise_if_cancelling(task: asyncio.Task[Any] | None) -> None:
    """End the loop when its task was asked to stop.

    A client library that turns a cancellation into an error of its own (caught above as a failed sample)
    must not keep the loop alive after shutdown cancelled it.
    """
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _resident_bytes() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


def _process_start_time() -> float:
    """When this process started (Unix seconds), from /proc where there is one."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/stat", "rb") as fh:
            boot = next(int(line.split()[1]) for line in fh if line.startswith(b"btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def certificate_expiry(path: Path) -> float | None:
    """When the first certificate in a PEM file expires (Unix seconds); ``None`` when it cannot be read."""
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        logger.warning("cannot read the certificate %s for its expiry", path.name)
        return None
    return cert.not_valid_after_utc.timestamp()
