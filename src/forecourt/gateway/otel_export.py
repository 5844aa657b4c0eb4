"""OpenTelemetry metrics and logs over OTLP/HTTP, next to the traces of :mod:`forecourt.gateway.telemetry`.

Metrics: the Prometheus registry stays the one place calls are counted (one cheap update per call); every
``otel_metric_export_interval_ms`` a background loop reads it and exports the same metrics as OTLP (counters as
cumulative monotonic sums, gauges as gauges, histograms with their buckets). Nothing is added to a call's hot
path, and ``/metrics`` and OTLP always agree. Each process exports its own values with ``process.pid`` in its
resource, so a collector adds workers and replicas up as it adds any other instances.

Logs: a ``LoggingHandler`` on the root logger sends every record (the JSON lines' content, trace ids included)
to ``/v1/logs`` through a batching processor; stderr keeps its JSON lines.

Endpoints and resource come from Settings (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``): see :func:`forecourt.gateway.telemetry.otlp_url` and ``otel_resource``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricExporter,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric as PromMetric

from forecourt.gateway.telemetry import forecourt_version, otel_resource, otlp_url
from forecourt.settings import Settings

logger = logging.getLogger(__name__)

_SCOPE = InstrumentationScope("forecourt", forecourt_version())


def registry_to_otlp(registry: CollectorRegistry, resource: Resource, start_ns: int) -> MetricsData:
    """The registry's current values as OTLP metrics data (cumulative since ``start_ns``)."""
    now = time.time_ns()
    metrics = [m for family in registry.collect() if (m := _convert(family, start_ns, now)) is not None]
    return MetricsData(
        resource_metrics=[
            ResourceMetrics(
                resource=resource,
                scope_metrics=[ScopeMetrics(scope=_SCOPE, metrics=metrics, schema_url="")],
                schema_url="",
            )
        ]
    )


def _labels(sample: Any) -> dict[str, str]:
    return {k: v for k, v in sample.labels.items() if k != "le"}


def _convert(family: PromMetric, start_ns: int, now_ns: int) -> Metric | None:
    if family.type == "counter":
        points = [
            NumberDataPoint(_labels(s), start_ns, now_ns, s.value) for s in family.samples if s.name.endswith("_total")
        ]
        data: Any = Sum(points, AggregationTemporality.CUMULATIVE, is_monotonic=True)
    elif family.type == "gauge":
        data = Gauge([NumberDataPoint(_labels(s), start_ns, now_ns, s.value) for s in family.samples])
    elif family.type == "histogram":
        data = Histogram(_histogram_points(family.samples, start_ns, now_ns), AggregationTemporality.CUMULATIVE)
    else:
        return None
    if not data.data_points:
        return None
    return Metric(name=family.name, description=family.documentation, unit="", data=data)


def _histogram_points(samples: Iterable[Any], start_ns: int, now_ns: int) -> list[HistogramDataPoint]:
    series: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    for s in samples:
        key = tuple(sorted(_labels(s).items()))
        entry = series.setdefault(key, {"buckets": [], "sum": 0.0, "count": 0})
        if s.name.endswith("_bucket"):
            entry["buckets"].append((float(s.labels["le"]), s.value))
        elif s.name.endswith("_sum"):
            entry["sum"] = s.value
        elif s.name.endswith("_count"):
            entry["count"] = int(s.value)
    points = []
    for key, entry in series.items():
        cumulative = sorted(entry["buckets"])
        bounds = [le for le, _ in cumulative if not math.isinf(le)]
        counts, previous = [], 0.0
        for _, value in cumulative:
            counts.append(int(value - previous))
            previous = value
        points.append(
            HistogramDataPoint(
                attributes=dict(key),
                start_time_unix_nano=start_ns,
                time_unix_nano=now_ns,
                count=entry["count"],
                sum=entry["sum"],
                bucket_counts=counts,
                explicit_bounds=bounds,
                min=math.nan,
                max=math.nan,
            )
        )
    return points


class MetricsExport:
    """Exports one registry over OTLP every interval (a ``services.background`` factory)."""

    def __init__(
        self, registry: CollectorRegistry, exporter: MetricExporter, resource: Resource, interval_s: float
    ) -> None:
        self.registry = registry
        self.exporter = exporter
        self.resource = resource
        self.interval_s = max(interval_s, 0.05)
        self.start_ns = time.time_ns()

    def export_once(self) -> bool:
        """Export the current values now (blocking: runs in a thread)."""
        result = self.exporter.export(registry_to_otlp(self.registry, self.resource, self.start_ns))
        return bool(getattr(result, "name", "") == "SUCCESS")

    async def run(self) -> None:
        """Export every interval until cancelled; a last export on the way out."""
        try:
            while True:
                await asyncio.sleep(self.interval_s)
                if not await asyncio.to_thread(self.export_once):
                    logger.warning("OTLP metric export failed; the next interval retries")
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(asyncio.to_thread(self.export_once))
            self.exporter.shutdown()


def process_resource(settings: Settings) -> Resource:
    """The OTel resource of this process (each worker is its own instance of the metrics)."""
    return otel_resource(settings).merge(Resource({"process.pid": os.getpid()}))


def metrics_export(settings: Settings, registry: CollectorRegistry) -> MetricsExport | None:
    """The OTLP metrics loop when an endpoint is configured, else ``None``."""
    url = otlp_url(settings, "metrics")
    if url is None:
        return None
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    logger.info("OTLP metric export enabled")
    interval = settings.otel_metric_export_interval_ms / 1000
    return MetricsExport(registry, OTLPMetricExporter(endpoint=url), process_resource(settings), interval)


_log_handler: logging.Handler | None = None


def configure_log_export(settings: Settings) -> Callable[[], None] | None:
    """Send the process's log records over OTLP when an endpoint is configured (once per process).

    Returns:
        A closer that flushes and detaches the handler, or ``None`` when logs are not exported.
    """
    global _log_handler
    url = otlp_url(settings, "logs")
    if url is None or _log_handler is not None:
        return None
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    provider = LoggerProvider(resource=process_resource(settings))
    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=url)))
    with warnings.catch_warnings():
        # Deprecated in favour of opentelemetry-instrumentation-logging, which would be one more dependency for
        # the same handler; the SDK's still works and is what that package wraps.
        warnings.simplefilter("ignore", DeprecationWarning)
        handler = LoggingHandler(level=logging.NOTSET, logger_provider=provider)
    logging.getLogger().addHandler(handler)
    _log_handler = handler
    logger.info("OTLP log export enabled")

    def close() -> None:
        global _log_handler
        logging.getLogger().removeHandler(handler)
        provider.shutdown()
        _log_handler = None

    return close
