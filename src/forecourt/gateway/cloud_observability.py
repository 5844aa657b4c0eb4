"""Google Cloud observability (seed 001 §4 "Observability", §7 "Trace logs in Cloud Trace, structured logs in
Cloud Logging, metrics in Cloud Monitoring (per adapter, per model)").

- **Cloud Trace**: the gateway's OpenTelemetry spans go to Cloud Trace through ``opentelemetry-exporter-gcp-trace``
  (``FORECOURT_CLOUD_TRACE=true``), beside or instead of OTLP.
- **Cloud Monitoring**: the gateway's metrics (the same ones ``/metrics`` serves: calls and durations by action,
  adapter, company and model; tokens by model; denials; rate limits; deliveries) are read from the Prometheus
  registry by OpenTelemetry observable instruments and exported by ``opentelemetry-exporter-gcp-monitoring`` every
  ``cloud_monitoring_interval_s`` (``FORECOURT_CLOUD_MONITORING=true``), as ``workload.googleapis.com/forecourt_*``.
- **Cloud Logging**: :class:`CloudLoggingFormatter` writes one JSON object per line in Cloud Logging's structured
  format: ``severity``, ``message``, ``time``, ``logging.googleapis.com/trace`` (``projects/P/traces/T``),
  ``logging.googleapis.com/spanId``, ``logging.googleapis.com/trace_sampled`` and ``sourceLocation``, so the
  Logs Explorer links each line to its trace (``FORECOURT_CLOUD_LOGGING=true``). Cloud Run's logging agent
  reads these fields from stdout/stderr; no client library is needed.

The exporters are the optional ``gcp`` extra, imported only when enabled. ``gcp_api_endpoint`` points both at
a local receiver over plain gRPC (tests, emulators); otherwise they use Application Default Credentials.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace
from prometheus_client import CollectorRegistry

from forecourt.settings import Settings

logger = logging.getLogger(__name__)

TRACE_FIELD = "logging.googleapis.com/trace"
SPAN_FIELD = "logging.googleapis.com/spanId"
SAMPLED_FIELD = "logging.googleapis.com/trace_sampled"
SOURCE_FIELD = "logging.googleapis.com/sourceLocation"
_SEVERITY = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARNING",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "CRITICAL",
}


def severity(levelno: int) -> str:
    """Cloud Logging's ``LogSeverity`` name for a Python level."""
    if levelno in _SEVERITY:
        return _SEVERITY[levelno]
    return "DEFAULT" if levelno < logging.DEBUG else ("CRITICAL" if levelno > logging.CRITICAL else "NOTICE")


class CloudLoggingFormatter(logging.Formatter):
    """Cloud Logging structured JSON, one object per line, linked to the current trace."""

    def __init__(self, project: str | None) -> None:
        super().__init__()
        self.project = project

    def format(self, record: logging.LogRecord) -> str:
        """The record as a Cloud Logging ``jsonPayload`` line."""
        entry: dict[str, Any] = {
            "severity": severity(record.levelno),
            "message": record.getMessage(),
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="microseconds"),
            "logger": record.name,
            SOURCE_FIELD: {"file": record.pathname, "line": str(record.lineno), "function": record.funcName},
        }
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            trace_id = format(span.trace_id, "032x")
            entry[TRACE_FIELD] = f"projects/{self.project}/traces/{trace_id}" if self.project else trace_id
            entry[SPAN_FIELD] = format(span.span_id, "016x")
            entry[SAMPLED_FIELD] = span.trace_flags.sampled
        if record.exc_info and record.exc_info[0] is not None:
            # The type helps operators; the traceback (exception messages can quote request values) stays out.
            entry["exc_type"] = record.exc_info[0].__name__
        return json.dumps(entry, ensure_ascii=False)


def use_cloud_logging(settings: Settings) -> bool:
    """Switch the root handlers to :class:`CloudLoggingFormatter` when ``settings.cloud_logging`` is on."""
    if not settings.cloud_logging:
        return False
    formatter = CloudLoggingFormatter(settings.gcp_project)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter)
    return True


def _channel(settings: Settings) -> Any:
    import grpc

    return grpc.insecure_channel(settings.gcp_api_endpoint or "")


def cloud_trace_exporter(settings: Settings) -> Any:
    """A Cloud Trace span exporter for ``settings`` (local receiver when ``gcp_api_endpoint`` is set).

    Raises:
        ImportError: ``opentelemetry-exporter-gcp-trace`` is not installed.
    """
    try:
        from google.cloud.trace_v2 import TraceServiceClient
        from google.cloud.trace_v2.services.trace_service.transports import TraceServiceGrpcTransport
        from opentelemetry.exporter.cloud_trace import CloudTraceSpanExporter
    except ImportError as exc:
        raise ImportError("pip install 'forecourt[gcp]' for Cloud Trace export") from exc
    client = None
    if settings.gcp_api_endpoint:
        client = TraceServiceClient(transport=TraceServiceGrpcTransport(channel=_channel(settings)))
    with warnings.catch_warnings():
        # The exporter is marked deprecated in favour of OTLP to telemetry.googleapis.com; it still works.
        warnings.simplefilter("ignore", DeprecationWarning)
        return CloudTraceSpanExporter(project_id=settings.gcp_project, client=client)  # type: ignore[no-untyped-call]


def cloud_monitoring_exporter(settings: Settings) -> Any:
    """A Cloud Monitoring metrics exporter for ``settings``.

    Raises:
        ImportError: ``opentelemetry-exporter-gcp-monitoring`` is not installed.
    """
    try:
        from google.cloud.monitoring_v3 import MetricServiceClient
        from google.cloud.monitoring_v3.services.metric_service.transports import MetricServiceGrpcTransport
        from opentelemetry.exporter.cloud_monitoring import CloudMonitoringMetricsExporter
    except ImportError as exc:
        raise ImportError("pip install 'forecourt[gcp]' for Cloud Monitoring export") from exc
    client = None
    if settings.gcp_api_endpoint:
        client = MetricServiceClient(transport=MetricServiceGrpcTransport(channel=_channel(settings)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # as for the trace exporter
        return CloudMonitoringMetricsExporter(project_id=settings.gcp_project, client=client)


def prometheus_observations(registry: CollectorRegistry) -> dict[str, list[tuple[str, float, dict[str, str]]]]:
    """The registry's current samples by family: counters' ``_total``, gauges, histograms' ``_count``/``_sum``."""
    out: dict[str, list[tuple[str, float, dict[str, str]]]] = {}
    for family in registry.collect():
        keep: Iterable[str]
        if family.type == "counter":
            keep = (family.name + "_total",)
        elif family.type == "gauge":
            keep = (family.name,)
        elif family.type == "histogram":
            keep = (family.name + "_count", family.name + "_sum")
        else:
            continue
        out[family.name] = [(s.name, float(s.value), dict(s.labels)) for s in family.samples if s.name in keep]
    return out


def _instruments(meter: Any, registry: CollectorRegistry) -> None:
    from opentelemetry.metrics import CallbackOptions, Observation

    def callback_for(family: str, sample: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            del options
            samples = prometheus_observations(registry).get(family, [])
            return [Observation(value, labels) for name, value, labels in samples if name == sample]

        return observe

    for family in registry.collect():
        if family.type == "counter":
            names = [(family.name + "_total", True)]
        elif family.type == "gauge":
            names = [(family.name, False)]
        elif family.type == "histogram":
            names = [(family.name + "_count", True), (family.name + "_sum", True)]
        else:
            continue
        for sample, cumulative in names:
            create = meter.create_observable_counter if cumulative else meter.create_observable_gauge
            create(sample, callbacks=[callback_for(family.name, sample)])


def enable_cloud_export(settings: Settings, registry: CollectorRegistry) -> list[Callable[[], Any]]:
    """Start Cloud Trace and Cloud Monitoring export as ``settings`` ask; returns closers (flush + shutdown)."""
    closers: list[Callable[[], Any]] = []
    if settings.cloud_trace:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from forecourt.gateway.telemetry import add_span_processor

        processor = BatchSpanProcessor(cloud_trace_exporter(settings))
        if add_span_processor(processor):
            closers.append(processor.shutdown)
            logger.info("Cloud Trace export enabled")
    if settings.cloud_monitoring:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource

        reader = PeriodicExportingMetricReader(
            cloud_monitoring_exporter(settings),
            export_interval_millis=settings.cloud_monitoring_interval_s * 1000,
        )
        provider = MeterProvider(
            metric_readers=[reader],
            resource=Resource.create({"service.name": "forecourt", "service.instance.id": settings.instance_name}),
        )
        _instruments(provider.get_meter("forecourt.gateway"), registry)
        closers.append(provider.shutdown)
        logger.info("Cloud Monitoring export enabled")
    return closers
