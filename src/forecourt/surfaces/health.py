"""Health, readiness and Prometheus metrics endpoints."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from forecourt.gateway.telemetry import Metrics
from forecourt.store.base import Store


def health_routes(store: Store, metrics: Metrics, is_draining: object = None) -> list[Route]:
    """``/healthz`` (process up), ``/readyz`` (database reachable, not draining) and ``/metrics``."""

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        draining = bool(callable(is_draining) and is_draining())
        db_ok = await store.ping()
        ready = db_ok and not draining
        checks = {"database": "ok" if db_ok else "down"}
        if draining:
            checks["draining"] = "yes"
        body = {"status": "ok" if ready else "unavailable", "checks": checks}
        return JSONResponse(body, status_code=200 if ready else 503)

    async def metrics_endpoint(_: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]
