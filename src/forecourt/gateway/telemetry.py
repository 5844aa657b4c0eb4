"""Prometheus metrics and OpenTelemetry tracing for the gateway.

Metrics live in a registry per app (not the global one) so several apps can run in one process.
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401 - see configure_tracing: imported before any fork
import logging
import random
import re
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import Attributes
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from forecourt import caching
from forecourt.settings import Settings

logger = logging.getLogger(__name__)

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


_HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0)
_RTT_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


@dataclass
class Metrics:
    """Every metric Forecourt exports.

    Under ``forecourt serve --workers N`` prometheus-client runs in multiprocess mode (values in memory-mapped
    files in ``PROMETHEUS_MULTIPROC_DIR``) and ``/metrics`` adds the workers up; each gauge says how
    (``multiprocess_mode``): ``livesum`` for per-process quantities, ``livemax``/``livemostrecent`` for values
    every process reads from the same place (the database's backlogs).
    """

    registry: CollectorRegistry
    calls: Counter
    duration: Histogram
    denials: Counter
    rate_limited: Counter
    cache_hits: Counter
    model_tokens: Counter
    audit_buffered: Gauge
    audit_written: Counter
    audit_write_failures: Counter
    outbox_lag: Gauge
    deliveries: Counter
    build_info: Gauge
    http_requests: Counter
    http_duration: Histogram
    sse_streams: Gauge
    draining: Gauge
    workers: Gauge
    process_cpu: Counter
    process_memory: Gauge
    process_open_fds: Gauge
    process_start_time: Gauge
    gc_collections: Counter
    event_loop_lag: Histogram
    db_pool: Gauge
    db_roundtrip: Histogram
    redis_roundtrip: Histogram
    redis_up: Gauge
    delivery_backlog: Gauge
    certificate_expiry: Gauge
    client_faults: Counter
    process_caches: ProcessCaches


def build_metrics() -> Metrics:
    """A fresh registry with Forecourt's metrics."""
    reg = CollectorRegistry(auto_describe=True)
    return Metrics(
        registry=reg,
        calls=Counter(
            "forecourt_calls", "Gateway invocations", ["action", "adapter", "company", "model", "status"], registry=reg
        ),
        duration=Histogram(
            "forecourt_call_duration_seconds",
            "Gateway invocation duration",
            ["action", "adapter", "company", "model"],
            buckets=_BUCKETS,
            registry=reg,
        ),
        denials=Counter("forecourt_denials", "Denied invocations by reason", ["reason", "action"], registry=reg),
        rate_limited=Counter("forecourt_rate_limited", "Rate-limit rejections", ["scope"], registry=reg),
        cache_hits=Counter("forecourt_cache_hits", "Result cache hits", ["action"], registry=reg),
        model_tokens=Counter("forecourt_model_tokens", "Tokens used by model calls", ["model"], registry=reg),
        audit_buffered=Gauge(
            "forecourt_audit_buffered", "Audit records waiting to be written", registry=reg, multiprocess_mode="livesum"
        ),
        audit_written=Counter("forecourt_audit_written", "Audit records written", registry=reg),
        audit_write_failures=Counter("forecourt_audit_write_failures", "Failed audit batch writes", registry=reg),
        outbox_lag=Gauge(
            "forecourt_outbox_lag_events",
            "Outbox events this process has not dispatched yet (the worst process)",
            registry=reg,
            multiprocess_mode="livemax",
        ),
        deliveries=Counter("forecourt_deliveries", "Outbound deliveries", ["kind", "result"], registry=reg),
        client_faults=Counter(
            "forecourt_client_faults", "Malformed requests refused by a front door", ["surface", "kind"], registry=reg
        ),
        build_info=Gauge(
            "forecourt_build_info",
            "Always 1: the running version",
            ["version", "python"],
            registry=reg,
            multiprocess_mode="livemax",
        ),
        http_requests=Counter(
            "forecourt_http_requests", "HTTP requests by front door and status", ["door", "status"], registry=reg
        ),
        http_duration=Histogram(
            "forecourt_http_request_duration_seconds",
            "HTTP request duration by front door (SSE streams: until the stream ends)",
            ["door"],
            buckets=_HTTP_BUCKETS,
            registry=reg,
        ),
        sse_streams=Gauge(
            "forecourt_sse_streams", "Open server-sent-event streams", registry=reg, multiprocess_mode="livesum"
        ),
        draining=Gauge(
            "forecourt_draining", "1 while the process drains after SIGTERM", registry=reg, multiprocess_mode="livemax"
        ),
        workers=Gauge("forecourt_workers", "Live worker processes", registry=reg, multiprocess_mode="livesum"),
        process_cpu=Counter("process_cpu_seconds", "User and system CPU time spent, all workers", registry=reg),
        process_memory=Gauge(
            "process_resident_memory_bytes", "Resident memory, all workers", registry=reg, multiprocess_mode="livesum"
        ),
        process_open_fds=Gauge(
            "process_open_fds", "Open file descriptors, all workers", registry=reg, multiprocess_mode="livesum"
        ),
        process_start_time=Gauge(
            "process_start_time_seconds",
            "Start time of the oldest worker (Unix seconds)",
            registry=reg,
            multiprocess_mode="livemin",
        ),
        gc_collections=Counter(
            "python_gc_collections", "Garbage collections by generation", ["generation"], registry=reg
        ),
        event_loop_lag=Histogram(
            "forecourt_event_loop_lag_seconds",
            "How late the event loop ran a timer (a busy or blocked loop)",
            buckets=_RTT_BUCKETS,
            registry=reg,
        ),
        db_pool=Gauge(
            "forecourt_db_pool_connections",
            "Database pool connections by state (checked_out, idle, overflow, size)",
            ["state"],
            registry=reg,
            multiprocess_mode="livesum",
        ),
        db_roundtrip=Histogram(
            "forecourt_db_roundtrip_seconds", "Database ping round trip", buckets=_RTT_BUCKETS, registry=reg
        ),
        redis_roundtrip=Histogram(
            "forecourt_redis_roundtrip_seconds", "Redis PING round trip", buckets=_RTT_BUCKETS, registry=reg
        ),
        redis_up=Gauge(
            "forecourt_redis_up", "1 when Redis answered the last ping", registry=reg, multiprocess_mode="livemin"
        ),
        delivery_backlog=Gauge(
            "forecourt_delivery_backlog",
            "Outbound deliveries not delivered, by status (pending, retrying, failed)",
            ["status"],
            registry=reg,
            multiprocess_mode="livemostrecent",
        ),
        certificate_expiry=Gauge(
            "forecourt_certificate_expiry_timestamp_seconds",
            "When a certificate Forecourt serves with expires (Unix seconds), by kind (server)",
            ["kind"],
            registry=reg,
            multiprocess_mode="livemin",
        ),
        process_caches=ProcessCaches(reg),
    )


class ProcessCaches:
    """The counts of every cache of the process (``forecourt.caching``) as Prometheus series, one per cache name.

    The caches count in plain integers (a hit costs no metric call); :meth:`sync` adds what they counted since the
    last sync to ``forecourt_process_cache_{hits,misses,evictions}_total`` and sets ``forecourt_process_cache_entries``
    (and ``forecourt_process_cache_bytes`` for caches bounded in bytes).
    The runtime sampler syncs every sample and ``/metrics`` before it answers, so under ``--workers N`` each worker
    writes its own values (multiprocess files, added up) and a single process is exact at each scrape.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["cache"]
        self.hits = Counter("forecourt_process_cache_hits", "Cache hits by cache", labels, registry=registry)
        self.misses = Counter("forecourt_process_cache_misses", "Cache misses by cache", labels, registry=registry)
        self.evictions = Counter(
            "forecourt_process_cache_evictions", "Entries dropped for size or age, by cache", labels, registry=registry
        )
        self.entries = Gauge(
            "forecourt_process_cache_entries",
            "Entries held now, by cache",
            labels,
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.held_bytes = Gauge(
            "forecourt_process_cache_bytes",
            "Bytes of the values held now, by cache (caches bounded in bytes: the result caches)",
            labels,
            registry=registry,
            multiprocess_mode="livesum",
        )
        self._synced: dict[str, tuple[int, int, int]] = {}

    def sync(self) -> None:
        """Bring the series up to the caches' counts now."""
        for info in caching.snapshot():
            hits, misses, evictions = self._synced.get(info.name, (0, 0, 0))
            if info.hits > hits:
                self.hits.labels(info.name).inc(info.hits - hits)
            if info.misses > misses:
                self.misses.labels(info.name).inc(info.misses - misses)
            if info.evictions > evictions:
                self.evictions.labels(info.name).inc(info.evictions - evictions)
            self.entries.labels(info.name).set(info.entries)
            if info.held_bytes:
                self.held_bytes.labels(info.name).set(info.held_bytes)
            self._synced[info.name] = (max(hits, info.hits), max(misses, info.misses), max(evictions, info.evictions))


@dataclass
class RequestNote:
    """What the gateway tells the HTTP access log about the request it runs in."""

    company: str | None = None
    trace_id: str | None = None


REQUEST_NOTE: ContextVar[RequestNote | None] = ContextVar("forecourt_request_note", default=None)
"""Set by the access-log middleware for each HTTP request; the gateway fills it in (one lookup per call)."""


class ExportAwareSampler(Sampler):
    """Records spans only once something will export them.

    Without an exporter every span would be built and thrown away: a real cost on each call's hot path.
    Until :meth:`enable` is called (by :func:`configure_tracing` with an OTLP endpoint, or by
    :func:`add_span_processor`) spans are not recorded, yet they still carry valid trace ids, so an
    incoming ``traceparent`` is continued and logs and audit records name the trace. Once enabled it
    samples as the configured sampler does (``OTEL_TRACES_SAMPLER``/``_ARG``; default ``ParentBased(ALWAYS_ON)``).
    """

    def __init__(self, sampler: Sampler | None = None) -> None:
        self.enabled = False
        self._on = sampler or ParentBased(ALWAYS_ON)

    def enable(self) -> None:
        """Start recording spans."""
        self.enabled = True

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        """Drop while disabled, else sample as the parent did (root spans always)."""
        chosen = self._on if self.enabled else ALWAYS_OFF
        return chosen.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        """The sampler's name."""
        return f"ExportAwareSampler(enabled={self.enabled})"


class _TracerCachingProvider(TracerProvider):
    """The SDK provider with a lock-free tracer cache in front of ``get_tracer``.

    a2a-sdk calls ``trace.get_tracer`` in every traced method (tens of times per A2A request); the SDK's
    implementation runs ``warnings.filterwarnings`` and builds two scope objects on each call before it finds
    the tracer it already made (~8 µs each). Same tracers, same spans; only the repeated work is skipped.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tracer_cache: caching.Cache[tuple[str, str | None, str | None], trace.Tracer] = caching.lru(
            "gateway.telemetry.tracers", 256
        )

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> trace.Tracer:
        """The tracer for an instrumentation scope (cached unless scope attributes are given)."""
        if attributes is not None:
            return super().get_tracer(instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        key = (instrumenting_module_name, instrumenting_library_version, schema_url)
        tracer = self._tracer_cache.get(key)
        if tracer is None:
            tracer = super().get_tracer(instrumenting_module_name, instrumenting_library_version, schema_url)
            self._tracer_cache.put(key, tracer)
        return tracer


_provider: TracerProvider | None = None
_sampler: ExportAwareSampler | None = None


def configured_sampler(settings: Settings) -> Sampler:
    """The sampler named by ``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG`` (through Settings)."""
    name = settings.otel_traces_sampler.strip().lower()
    ratio = min(max(settings.otel_traces_sampler_arg, 0.0), 1.0)
    base: Sampler
    inner = name.removeprefix("parentbased_")
    if inner == "always_off":
        base = ALWAYS_OFF
    elif inner == "traceidratio":
        base = TraceIdRatioBased(ratio)
    else:
        if inner != "always_on":
            logger.warning("unknown OTEL_TRACES_SAMPLER %r; sampling every trace", name[:40])
        base = ALWAYS_ON
    return ParentBased(base) if name.startswith("parentbased_") else base


def otel_resource(settings: Settings) -> Resource:
    """``service.name`` and ``OTEL_RESOURCE_ATTRIBUTES`` (through Settings), plus the instance and version."""
    attributes: dict[str, str] = {}
    for pair in settings.otel_resource_attributes.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            attributes[key.strip()] = value.strip()
    attributes.setdefault("service.instance.id", settings.instance_name)
    attributes.setdefault("service.version", forecourt_version())
    attributes["service.name"] = settings.otel_service_name
    # Resource.get_empty, not Resource.create: Settings already read the standard variables.
    return Resource.get_empty().merge(Resource(attributes))


def otlp_url(settings: Settings, signal: str) -> str | None:
    """Where ``signal`` (``traces``, ``metrics``, ``logs``) is exported, or ``None`` when it is not."""
    if signal == "traces" and settings.otlp_endpoint:
        return settings.otlp_endpoint
    base = settings.otel_exporter_otlp_endpoint
    if not base:
        return None
    return f"{base.rstrip('/')}/v1/{signal}"


def forecourt_version() -> str:
    """The installed Forecourt version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("forecourt")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


def configure_tracing(settings: Settings) -> trace.Tracer:
    """The tracer; installs an SDK provider once per process (with OTLP export when configured).

    The SDK's provider re-detects the process's resource in every forked child, through a thread pool. A child
    that uvloop forks to start a stdio upstream server runs that handler before it execs, and a first import of
    ``concurrent.futures.thread`` there blocked the child for good (and the parent with it, which waits for the
    exec: tests/upstream's stdio upstream, once nothing else had imported the module at start). This module
    imports it at the top, so the handler imports nothing in a child.
    """
    global _provider, _sampler
    if _provider is None:
        _sampler = ExportAwareSampler(configured_sampler(settings))
        _provider = _TracerCachingProvider(resource=otel_resource(settings), sampler=_sampler)
        url = otlp_url(settings, "traces")
        if url:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
            _sampler.enable()
            logger.info("OTLP trace export enabled")
        trace.set_tracer_provider(_provider)
    return trace.get_tracer("forecourt.gateway")


def add_span_processor(processor: SpanProcessor) -> bool:
    """Send the process's spans to ``processor`` too (another exporter, or an in-memory one in tests).

    Returns:
        Whether it was added (``False`` when Forecourt's provider is not the global one, e.g. because
        the host application installed its own: add the processor there).
    """
    if _provider is None or _sampler is None or trace.get_tracer_provider() is not _provider:
        return False
    _provider.add_span_processor(processor)
    _sampler.enable()
    return True


_propagator = TraceContextTextMapPropagator()
_HEX_TRACE = re.compile(r"[0-9a-fA-F]{32}")


def parent_context(traceparent: str | None, caller: str | None) -> tuple[Context | None, bool]:
    """The trace context a call continues, and whether it came from ``caller.traceId``.

    An incoming W3C ``traceparent`` wins. Otherwise a ``caller.traceId`` of 32 hex digits continues that
    trace (under a synthetic remote parent), unless the call is nested inside another traced call
    (workflows calling actions), which it then simply joins.
    """
    if traceparent:
        return _propagator.extract({"traceparent": traceparent}), False
    if not caller or not _HEX_TRACE.fullmatch(caller) or int(caller, 16) == 0:
        return None, False
    if trace.get_current_span().get_span_context().is_valid:
        return None, False
    parent = SpanContext(
        trace_id=int(caller, 16),
        span_id=random.getrandbits(64) or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent)), True


class CurrentSpan:
    """``tracer.start_as_current_span(name, context=...)`` as a plain context manager.

    The same span, context and outcome as the SDK's (an ``Exception`` leaving the block is recorded on a recording
    span and sets its status, as ``trace.use_span`` does; the span ends on exit), without the generator-based
    context managers the SDK stacks for it: about 40 % of a dropped span's cost on every call.
    """

    __slots__ = ("_token", "span")

    def __init__(self, tracer: trace.Tracer, name: str, context: Context | None = None) -> None:
        self.span = tracer.start_span(name, context=context)
        self._token: object = None

    def __enter__(self) -> trace.Span:
        self._token = otel_context.attach(trace.set_span_in_context(self.span))
        return self.span

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        span = self.span
        try:
            if isinstance(exc, Exception) and span.is_recording():
                span.record_exception(exc)
                span.set_status(Status(status_code=StatusCode.ERROR, description=f"{type(exc).__name__}: {exc}"))
        finally:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            span.end()


class CallSeries:
    """Each call's counter and duration histogram, looked up once per label set.

    prometheus-client's ``labels()`` checks its arguments and takes a lock on every call; the series of a label set
    ``(action, adapter, company, model, status)`` are kept here instead (``gateway.telemetry.call_series``: at most
    ``kept``, the least recently used let go; the series themselves live on in the registry).
    """

    def __init__(self, metrics: Metrics, kept: int = 4096) -> None:
        self._metrics = metrics
        self._found: caching.Cache[tuple[str, str, str, str, int], tuple[Any, Any]] = caching.lru(
            "gateway.telemetry.call_series", kept
        )

    def count(self, key: tuple[str, str, str, str, int], duration_s: float) -> None:
        """Count one call under ``key`` and observe its duration."""
        series = self._found.get(key)
        if series is None:
            labels = key[:4]
            series = (self._metrics.calls.labels(*labels, str(key[4])), self._metrics.duration.labels(*labels))
            self._found.put(key, series)
        series[0].inc()
        series[1].observe(duration_s)
