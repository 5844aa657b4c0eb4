"""Health, readiness and Prometheus metrics endpoints."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from forecourt.gateway.telemetry import Metrics
from forecourt.lifecycle import Drain

READY_TIMEOUT_S = 2.0


async def _timed(check: Callable[[], Awaitable[Any]]) -> tuple[bool, str, float]:
    """Run one dependency check: (ok, reason, seconds). The reason names the failure's class, nothing more."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            result = await check()
    except TimeoutError:
        return False, "timeout", time.perf_counter() - started
    except Exception as exc:  # a readiness probe reports, it never raises
        return False, type(exc).__name__, time.perf_counter() - started
    if result is False:
        return False, "unreachable", time.perf_counter() - started
    return True, "ok", time.perf_counter() - started


def health_routes(
    database_ping: Callable[[], Awaitable[object]],
    metrics: Metrics,
    drain: Drain | None = None,
    *,
    redis_ping: Callable[[], Awaitable[object]] | None = None,
    multiprocess_dir: Path | None = None,
) -> list[Route]:
    """``/healthz`` (process up), ``/readyz`` (every dependency answers, not draining) and ``/metrics``.

    ``/readyz`` answers ``{"status": "ok"|"unavailable", "checks": {name: {"status", "reason"?, "ms"}}}`` with
    one check per dependency in use (``database``, and ``redis`` when configured) and ``draining`` while the
    process drains; 503 when any of them is not ``ok``.
    """

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        dependencies: dict[str, Callable[[], Awaitable[Any]]] = {"database": database_ping}
        if redis_ping is not None:
            dependencies["redis"] = redis_ping
        results = await asyncio.gather(*(_timed(check) for check in dependencies.values()))
        checks: dict[str, dict[str, Any]] = {}
        ready = True
        for name, (ok, reason, seconds) in zip(dependencies, results, strict=True):
            entry: dict[str, Any] = {"status": "ok" if ok else "down", "ms": round(seconds * 1000, 2)}
            if not ok:
                entry["reason"] = reason
                ready = False
            checks[name] = entry
            if name == "redis":
                metrics.redis_up.set(1 if ok else 0)
        if drain is not None and drain.draining:
            checks["draining"] = {"status": "draining", "reason": "SIGTERM received; finishing in-flight calls"}
            ready = False
        body = {"status": "ok" if ready else "unavailable", "checks": checks}
        return JSONResponse(body, status_code=200 if ready else 503)

    async def metrics_endpoint(_: Request) -> Response:
        return Response(exposition(metrics, multiprocess_dir), media_type=CONTENT_TYPE_LATEST)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]


def exposition(metrics: Metrics, multiprocess_dir: Path | None) -> bytes:
    """The Prometheus text of this process, or of every worker when prometheus-client runs multiprocess."""
    metrics.process_caches.sync()
    if multiprocess_dir is None:
        return generate_latest(metrics.registry)
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(multiprocess_dir))  # type: ignore[no-untyped-call]
    return generate_latest(registry)
