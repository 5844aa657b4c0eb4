"""Prometheus metrics and OpenTelemetry tracing for the gateway.

Metrics live in a registry per app (not the global one) so several apps can run in one process.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from forecourt.settings import Settings

logger = logging.getLogger(__name__)

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class Metrics:
    """Every metric Forecourt exports."""

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
        audit_buffered=Gauge("forecourt_audit_buffered", "Audit records waiting to be written", registry=reg),
        audit_written=Counter("forecourt_audit_written", "Audit records written", registry=reg),
        audit_write_failures=Counter("forecourt_audit_write_failures", "Failed audit batch writes", registry=reg),
        outbox_lag=Gauge("forecourt_outbox_lag_events", "Outbox events not yet dispatched", registry=reg),
        deliveries=Counter("forecourt_deliveries", "Outbound deliveries", ["kind", "result"], registry=reg),
    )


_provider_configured = False


def configure_tracing(settings: Settings) -> trace.Tracer:
    """The tracer; installs an SDK provider once per process (with OTLP export when configured)."""
    global _provider_configured
    if not _provider_configured:
        provider = TracerProvider(resource=Resource.create({"service.name": "forecourt"}))
        if settings.otlp_endpoint:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.otlp_endpoint)))
            logger.info("OTLP trace export enabled")
        trace.set_tracer_provider(provider)
        _provider_configured = True
    return trace.get_tracer("forecourt.gateway")
