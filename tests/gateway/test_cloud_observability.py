"""Cloud Trace and Cloud Monitoring export against local gRPC receivers (the exporters' endpoint override), and
the Cloud Logging structured format."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from forecourt.gateway.cloud_observability import (
    SAMPLED_FIELD,
    SPAN_FIELD,
    TRACE_FIELD,
    CloudLoggingFormatter,
    enable_cloud_export,
    prometheus_observations,
    severity,
    use_cloud_logging,
)
from forecourt.gateway.telemetry import build_metrics
from forecourt.settings import Settings

PROJECT = "forecourt-test-project"


def _needs_gcp_extra() -> None:
    if importlib.util.find_spec("opentelemetry.exporter.cloud_trace") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the gcp extra (opentelemetry-exporter-gcp-trace/-monitoring) must be installed in CI")
        pytest.skip("the gcp extra is not installed")


class Receiver:
    """A gRPC server on loopback that records what Cloud Trace / Cloud Monitoring clients send."""

    def __init__(self) -> None:
        import grpc
        from google.cloud.monitoring_v3.types import CreateMetricDescriptorRequest, CreateTimeSeriesRequest
        from google.cloud.trace_v2.types import BatchWriteSpansRequest

        self.spans: list[Any] = []
        self.series: list[Any] = []
        self.descriptors: list[Any] = []

        def unary(kind: Any, sink: list[Any], reply: Callable[[Any], bytes]) -> Any:
            def handle(request: Any, context: Any) -> Any:
                del context
                sink.append(request)
                return request

            return grpc.unary_unary_rpc_method_handler(
                handle, request_deserializer=kind.deserialize, response_serializer=reply
            )

        empty: Callable[[Any], bytes] = lambda _: b""  # noqa: E731
        trace = grpc.method_handlers_generic_handler(
            "google.devtools.cloudtrace.v2.TraceService",
            {"BatchWriteSpans": unary(BatchWriteSpansRequest, self.spans, empty)},
        )
        metrics = grpc.method_handlers_generic_handler(
            "google.monitoring.v3.MetricService",
            {
                "CreateTimeSeries": unary(CreateTimeSeriesRequest, self.series, empty),
                "CreateMetricDescriptor": unary(
                    CreateMetricDescriptorRequest,
                    self.descriptors,
                    lambda request: request.metric_descriptor.SerializeToString(),
                ),
            },
        )
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[trace, metrics])
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A fresh local receiver."""
    _needs_gcp_extra()
    made = Receiver()
    try:
        yield made
    finally:
        made.server.stop(grace=None)


def _settings(receiver: Receiver, **extra: Any) -> Settings:
    return Settings(gcp_project=PROJECT, gcp_api_endpoint=receiver.endpoint, **extra)


def test_spans_reach_cloud_trace_with_the_project_and_their_names(receiver: Receiver) -> None:
    from forecourt.gateway.cloud_observability import cloud_trace_exporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(cloud_trace_exporter(_settings(receiver))))
    with provider.get_tracer("test").start_as_current_span("gateway.invoke") as span:
        span.set_attribute("forecourt.action", "vertex.invokeModel")
        trace_id = format(span.get_span_context().trace_id, "032x")
    provider.shutdown()
    request = receiver.spans[-1]
    assert request.name == f"projects/{PROJECT}"
    written = request.spans[0]
    assert written.display_name.value == "gateway.invoke"
    assert written.name.startswith(f"projects/{PROJECT}/traces/{trace_id}/spans/")
    assert written.attributes.attribute_map["forecourt.action"].string_value.value == "vertex.invokeModel"


def test_gateway_metrics_reach_cloud_monitoring_per_action_adapter_and_model(receiver: Receiver) -> None:
    metrics = build_metrics()
    labels = {"action": "vertex.invokeModel", "adapter": "vertex", "company": "demo-motor-group", "model": "gemini"}
    metrics.calls.labels(status="ok", **labels).inc(3)
    metrics.model_tokens.labels(model="gemini").inc(120)
    closers = enable_cloud_export(_settings(receiver, cloud_monitoring=True), metrics.registry)
    for close in closers:  # shutdown flushes one final export
        close()
    series = [ts for request in receiver.series for ts in request.time_series]
    by_type = {ts.metric.type: ts for ts in series}
    calls = by_type["workload.googleapis.com/forecourt_calls_total"]
    assert dict(calls.metric.labels) == {**labels, "status": "ok"}
    assert calls.points[0].value.int64_value == 3 or calls.points[0].value.double_value == 3.0
    assert "workload.googleapis.com/forecourt_model_tokens_total" in by_type
    assert all(request.name == f"projects/{PROJECT}" for request in receiver.series)


def test_nothing_is_exported_unless_configured() -> None:
    assert enable_cloud_export(Settings(), build_metrics().registry) == []


def test_prometheus_samples_are_read_by_family() -> None:
    metrics = build_metrics()
    metrics.denials.labels(reason="scope", action="leads.create").inc()
    samples = prometheus_observations(metrics.registry)
    assert samples["forecourt_denials"] == [
        ("forecourt_denials_total", 1.0, {"reason": "scope", "action": "leads.create"})
    ]


def _record(level: int = logging.WARNING, message: str = "upstream %s refused") -> logging.LogRecord:
    return logging.LogRecord("forecourt.test", level, __file__, 42, message, ("vertex",), None, func="handler")


def test_cloud_logging_lines_carry_severity_and_link_to_the_current_trace() -> None:
    provider = TracerProvider()
    formatter = CloudLoggingFormatter(PROJECT)
    with provider.get_tracer("test").start_as_current_span("gateway.invoke") as span:
        line = json.loads(formatter.format(_record()))
        context = span.get_span_context()
    assert line["severity"] == "WARNING"
    assert line["message"] == "upstream vertex refused"
    assert line[TRACE_FIELD] == f"projects/{PROJECT}/traces/{format(context.trace_id, '032x')}"
    assert line[SPAN_FIELD] == format(context.span_id, "016x")
    assert line[SAMPLED_FIELD] is True
    assert line["logging.googleapis.com/sourceLocation"]["line"] == "42"


def test_cloud_logging_lines_outside_a_trace_have_no_trace_fields_and_no_traceback() -> None:
    try:
        raise ValueError("customer said 555-0100")
    except ValueError:
        import sys

        record = logging.LogRecord("forecourt.test", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = json.loads(CloudLoggingFormatter(PROJECT).format(record))
    assert TRACE_FIELD not in line
    assert line["severity"] == "ERROR"
    assert line["exc_type"] == "ValueError"
    assert "555-0100" not in json.dumps(line)


def test_python_levels_map_onto_cloud_logging_severities() -> None:
    assert [severity(n) for n in (10, 20, 30, 40, 50, 5, 25)] == [
        "DEBUG",
        "INFO",
        "WARNING",
        "ERROR",
        "CRITICAL",
        "DEFAULT",
        "NOTICE",
    ]


def test_cloud_logging_is_switched_on_by_settings_only() -> None:
    root = logging.getLogger()
    handler = logging.StreamHandler()
    root.addHandler(handler)
    try:
        assert not use_cloud_logging(Settings())
        assert use_cloud_logging(Settings(cloud_logging=True, gcp_project=PROJECT))
        assert isinstance(handler.formatter, CloudLoggingFormatter)
    finally:
        root.removeHandler(handler)
