"""In-process checks of what operators observe: readiness per dependency, the access log, uvicorn's lines in
the same JSON, SSE streams closed with ``retry:`` on drain, the sampled gauges, and OTLP metrics and logs."""

from __future__ import annotations

import asyncio
import json
import logging
import logging.config
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from forecourt.bootstrap import Services, build_services, create_app
from forecourt.gateway.telemetry import build_metrics, configured_sampler, otel_resource
from forecourt.lifecycle import Drain
from forecourt.logs import JsonFormatter, uvicorn_log_config
from forecourt.settings import Settings
from forecourt.store import upgrade_async
from forecourt.surfaces.access import AccessMiddleware, door_of

HOST = "http://127.0.0.1:8000"


@pytest.fixture
async def database(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path}/forecourt.db"
    await upgrade_async(url)
    return url


@pytest.fixture
def captured() -> Iterator[list[logging.LogRecord]]:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.INFO)
    access = logging.getLogger("forecourt.access")
    previous = access.level
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    yield records
    access.removeHandler(handler)
    access.setLevel(previous)


async def _client(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(services=services)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=HOST) as client,
    ):
        yield client


async def test_readyz_names_each_dependency_with_a_reason_when_one_is_down(database: str) -> None:
    services = build_services(Settings(database_url=database))

    async def redis_down() -> object:
        raise ConnectionRefusedError

    services.backends.ping = redis_down
    async for client in _client(services):
        response = await client.get("/readyz")
        assert response.status_code == 503
        checks = response.json()["checks"]
        assert checks["database"]["status"] == "ok"
        assert checks["redis"] == {"status": "down", "reason": "ConnectionRefusedError", "ms": checks["redis"]["ms"]}
        services.begin_drain()
        draining = (await client.get("/readyz")).json()["checks"]["draining"]
        assert draining["status"] == "draining"


async def test_readyz_is_ok_when_every_dependency_answers(database: str) -> None:
    services = build_services(Settings(database_url=database))

    async def redis_up() -> object:
        return True

    services.backends.ping = redis_up
    async for client in _client(services):
        response = await client.get("/readyz")
        assert response.status_code == 200
        assert {name: c["status"] for name, c in response.json()["checks"].items()} == {"database": "ok", "redis": "ok"}


async def test_the_access_log_has_one_line_per_request_with_the_path_template_and_no_credential(
    database: str, captured: list[logging.LogRecord]
) -> None:
    services = build_services(Settings(database_url=database))
    secret = "fck_notakey_0123456789abcdefghijklmnopqrstuv"
    async for client in _client(services):
        await client.post(
            "/mcp/inventory.search?email=someone%40example.com",
            json={"payload": {"dealership_id": "demo-toyota-sf", "email": "someone@example.com"}},
            headers={"Authorization": f"Bearer {secret}"},
        )
        await client.get("/dealers/demo-toyota-sf/.well-known/agent-card.json")
    lines = [json.loads(JsonFormatter().format(r)) for r in captured]
    assert [(line["method"], line["path"], line["door"]) for line in lines] == [
        ("POST", "/mcp/{action_name}", "rest"),
        ("GET", "/dealers/{dealership_id}/.well-known/agent-card.json", "discovery"),
    ]
    rest = lines[0]
    assert rest["status"] == 401
    assert len(rest["trace_id"]) == 32
    assert rest["duration_ms"] >= 0
    text = json.dumps(lines)
    assert secret not in text
    assert "example.com" not in text
    assert "demo-toyota-sf" not in text  # the template, never the concrete path


async def test_http_metrics_count_each_front_door_and_status(database: str) -> None:
    services = build_services(Settings(database_url=database, access_log=False))
    async for client in _client(services):
        for _ in range(3):
            await client.get("/healthz")
        await client.post("/mcp/inventory.search", json={"payload": {}})
        text = (await client.get("/metrics")).text
    assert 'forecourt_http_requests_total{door="health",status="200"} 3.0' in text
    assert 'forecourt_http_requests_total{door="rest",status="401"} 1.0' in text
    assert 'forecourt_build_info{python="' in text


def test_front_doors_are_named_from_path_templates() -> None:
    assert door_of("/mcp") == "mcp"
    assert door_of("/mcp/{action_name}") == "rest"
    assert door_of("/dealers/{dealership_id}/a2a/jsonrpc") == "a2a"
    assert door_of("/.well-known/agent-card.json") == "discovery"
    assert door_of("/admin/v1/companies") == "admin"
    assert door_of("/readyz") == "health"
    assert door_of("-") == "unmatched"


def test_uvicorn_lines_use_the_same_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        logging.config.dictConfig(uvicorn_log_config("INFO"))
        logging.getLogger("uvicorn.error").info("Started server process [%d]", 42)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert (line["logger"], line["message"], line["level"]) == ("uvicorn.error", "Started server process [42]", "info")


async def test_a_draining_app_closes_open_sse_streams_with_a_retry_event_and_closes_new_ones_at_once() -> None:
    drain = Drain(sse_retry_ms=1500)
    stop = asyncio.Event()

    async def events(_: Request) -> EventSourceResponse:
        async def generate() -> AsyncIterator[dict[str, str]]:
            yield {"data": "hello"}
            await stop.wait()

        return EventSourceResponse(generate())

    routes = [Route("/events", events)]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(AccessMiddleware, metrics=build_metrics(), drain=drain, routes=routes, log=False)],
    )

    async def stream() -> list[bytes]:
        chunks: list[bytes] = []
        done = asyncio.Event()
        disconnect = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await disconnect.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    done.set()
                    disconnect.set()  # as uvicorn does once a response is complete

        scope = {"type": "http", "method": "GET", "path": "/events", "headers": [], "query_string": b""}
        task = asyncio.create_task(app(scope, receive, send))  # type: ignore[arg-type]
        async with asyncio.timeout(5):
            while not chunks:  # noqa: ASYNC110 - bounded poll until the first event is out
                await asyncio.sleep(0.01)
            if not drain.draining:
                drain.begin()
            await done.wait()
            await task
        return chunks

    before = await stream()
    after = await stream()  # opened while draining
    for chunks in (before, after):
        assert chunks[-1].endswith(b"retry: 1500\n\n")
    assert drain.streams == set()


async def test_the_access_layer_counts_requests_being_answered_but_not_open_event_streams() -> None:
    drain = Drain()
    seen: list[int] = []
    stop = asyncio.Event()

    async def plain(_: Request) -> PlainTextResponse:
        seen.append(drain.requests_open)
        return PlainTextResponse("ok")

    async def events(_: Request) -> EventSourceResponse:
        async def generate() -> AsyncIterator[dict[str, str]]:
            yield {"data": "hello"}
            await stop.wait()

        return EventSourceResponse(generate())

    routes = [Route("/plain", plain), Route("/events", events)]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(AccessMiddleware, metrics=build_metrics(), drain=drain, routes=routes, log=False)],
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=HOST) as client:
        assert (await client.get("/plain")).status_code == 200
    assert seen == [1]
    assert drain.requests_open == 0

    first_event = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client stays connected
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            first_event.set()

    scope = {"type": "http", "method": "GET", "path": "/events", "headers": [], "query_string": b""}
    task = asyncio.create_task(app(scope, receive, send))  # type: ignore[arg-type]
    async with asyncio.timeout(5):
        await first_event.wait()
        assert drain.requests_open == 0  # the stream is open; no request is being answered
        assert len(drain.streams) == 1
        stop.set()
        await task
    assert drain.requests_open == 0


async def test_the_sampler_exports_process_pool_and_backlog_gauges(database: str) -> None:
    from forecourt.gateway.sampler import RuntimeSampler

    services = build_services(Settings(database_url=database))

    async def redis_up() -> object:
        return True

    sampler = RuntimeSampler(services.metrics, services.store, redis_ping=redis_up, outbox_position=lambda: 0)
    sampler.announce()
    await sampler.sample_once()
    await services.store.close()
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in services.metrics.registry.collect()
        for s in family.samples
    }
    assert values[("process_resident_memory_bytes", ())] > 0
    assert values[("forecourt_workers", ())] == 1
    assert values[("forecourt_redis_up", ())] == 1
    assert values[("forecourt_outbox_lag_events", ())] == 0
    assert values[("forecourt_delivery_backlog", (("status", "pending"),))] == 0
    assert values[("forecourt_db_roundtrip_seconds_count", ())] == 1


def test_sampling_and_resource_come_from_the_standard_otel_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "forecourt-eu")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,team=dealers")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.25")
    settings = Settings.load()
    attributes = otel_resource(settings).attributes
    assert attributes["service.name"] == "forecourt-eu"
    assert attributes["deployment.environment"] == "prod"
    assert attributes["team"] == "dealers"
    description = configured_sampler(settings).get_description()
    assert "TraceIdRatioBased{0.25}" in description
    assert description.startswith("ParentBased")


class _Collector:
    """A fake OTLP/HTTP collector: keeps the protobuf bodies posted to /v1/metrics and /v1/logs."""

    def __init__(self) -> None:
        self.bodies: dict[str, list[bytes]] = {"/v1/metrics": [], "/v1/logs": [], "/v1/traces": []}
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                collector.bodies.setdefault(self.path, []).append(self.rfile.read(length))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def test_metrics_and_logs_are_exported_over_otlp_with_the_configured_resource(database: str) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    collector = _Collector()
    try:
        settings = Settings.load(
            database_url=database,
            otel_exporter_otlp_endpoint=collector.url,
            otel_service_name="forecourt-test",
            otel_metric_export_interval_ms=100,
        )
        services = build_services(settings)
        async for client in _client(services):
            await client.get("/healthz")
            emitter = logging.getLogger("forecourt.test")
            emitter.setLevel(logging.WARNING)  # whatever level earlier tests left on the root logger
            emitter.warning("a line for the collector")
            async with asyncio.timeout(10):
                while not collector.bodies["/v1/metrics"]:  # noqa: ASYNC110 - bounded poll
                    await asyncio.sleep(0.05)
    finally:
        collector.close()
    request = ExportMetricsServiceRequest.FromString(collector.bodies["/v1/metrics"][-1])
    resource = {a.key: a.value.string_value for a in request.resource_metrics[0].resource.attributes}
    assert resource["service.name"] == "forecourt-test"
    metrics = {m.name: m for m in request.resource_metrics[0].scope_metrics[0].metrics}
    points = metrics["forecourt_http_requests"].sum.data_points
    health = [p for p in points if {a.key: a.value.string_value for a in p.attributes}.get("door") == "health"]
    assert sum(p.as_double for p in health) >= 1
    assert metrics["forecourt_http_request_duration_seconds"].histogram.data_points[0].count >= 1
    logs = [
        record.body.string_value
        for body in collector.bodies["/v1/logs"]
        for rl in ExportLogsServiceRequest.FromString(body).resource_logs
        for sl in rl.scope_logs
        for record in sl.log_records
    ]
    assert "a line for the collector" in logs


async def test_background_loops_that_take_work_stop_when_the_drain_begins(database: str) -> None:
    services = build_services(Settings(database_url=database, delivery_poll_interval_s=30))
    await services.start()
    try:

        def takers() -> list[asyncio.Task[Any]]:
            names = ("DeliveryWorker.run", "EventRouter.run")
            return [t for t in services.tasks if t.get_coro().__qualname__ in names]  # type: ignore[union-attr]

        assert len(takers()) == 2
        services.begin_drain()
        async with asyncio.timeout(10):  # well before their 30 s poll interval
            await asyncio.gather(*takers())
    finally:
        await services.close()
