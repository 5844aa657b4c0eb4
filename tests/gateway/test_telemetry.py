"""Traces (W3C traceparent, caller.traceId, a span per stage and adapter), JSON logs and Prometheus metrics."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from forecourt.contract import ExecutionContext
from forecourt.gateway.telemetry import ExportAwareSampler
from forecourt.logs import JsonFormatter

from .support import BAY_SJ, MOTOR, TOYOTA, Rig, register_action

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"
EMAIL = "traced.person@example.com"


def spans_by_name(rig: Rig) -> dict[str, Any]:
    return {s.name: s for s in rig.spans.get_finished_spans()}


async def test_an_incoming_traceparent_continues_the_trace_with_a_span_per_stage_and_adapter(rig: Rig) -> None:
    response = await rig.call("inventory.search", {"dealership_id": TOYOTA}, headers={"traceparent": TRACEPARENT})
    assert response.status_code == 200
    assert response.json()["audit"]["trace"] == TRACE
    spans = spans_by_name(rig)
    for stage in ("gateway.authenticate", "gateway.validate", "gateway.authorize", "gateway.rate_limit"):
        assert stage in spans, stage
    assert "adapter.dealer-data" in spans
    root = spans["gateway.invoke"]
    assert format(root.parent.span_id, "016x") == PARENT
    assert {format(s.context.trace_id, "032x") for s in spans.values()} == {TRACE}
    for name, span in spans.items():
        if name != "gateway.invoke":
            assert span.parent.span_id == root.context.span_id, name
    rows = await rig.audit_rows()
    assert rows[0]["trace_id"] == TRACE


async def test_a_cached_call_has_a_cache_span_and_a_side_effect_an_idempotency_span(rig: Rig) -> None:
    await rig.call("dealer.information", {"dealership_id": TOYOTA})
    assert "gateway.cache" in spans_by_name(rig)
    payload = {"dealership_id": TOYOTA, "customer": {"first_name": "Tra", "last_name": "Ced", "email": EMAIL}}
    assert (await rig.call("leads.create", payload, headers={"Idempotency-Key": "k-1"})).status_code == 200
    assert "gateway.idempotency" in spans_by_name(rig)


async def test_the_envelope_caller_trace_id_is_the_trace_when_there_is_no_traceparent(rig: Rig) -> None:
    response = await rig.call("dealer.information", {"dealership_id": TOYOTA}, trace_id=TRACE)
    assert response.json()["audit"]["trace"] == TRACE
    assert {format(s.context.trace_id, "032x") for s in rig.spans.get_finished_spans()} == {TRACE}


async def test_a_caller_trace_id_that_is_not_w3c_is_kept_as_the_audit_trace(rig: Rig) -> None:
    response = await rig.call("dealer.information", {"dealership_id": TOYOTA}, trace_id="crm-run-77")
    assert response.json()["audit"]["trace"] == "crm-run-77"
    root = spans_by_name(rig)["gateway.invoke"]
    assert root.attributes["forecourt.caller_trace_id"] == "crm-run-77"
    assert (await rig.audit_rows())[0]["trace_id"] == "crm-run-77"


async def test_the_traceparent_wins_over_the_caller_trace_id(rig: Rig) -> None:
    response = await rig.call(
        "dealer.information", {"dealership_id": TOYOTA}, trace_id="a" * 32, headers={"traceparent": TRACEPARENT}
    )
    assert response.json()["audit"]["trace"] == TRACE


async def test_a_denied_call_is_traced_and_its_span_carries_the_error_code(rig: Rig) -> None:
    response = await rig.call("leads.list", {"dealership_id": BAY_SJ}, headers={"traceparent": TRACEPARENT})
    assert response.json()["audit"]["trace"] == TRACE
    root = spans_by_name(rig)["gateway.invoke"]
    assert root.attributes["forecourt.error_code"] == "auth.tenancy_denied"
    assert "adapter.dealer-data" not in spans_by_name(rig)


async def test_a_failed_call_ends_its_span_in_error_with_the_exception_recorded_and_the_context_restored(
    rig: Rig,
) -> None:
    from opentelemetry import trace
    from opentelemetry.trace import StatusCode

    before = trace.get_current_span()
    response = await rig.call("leads.list", {"dealership_id": BAY_SJ}, headers={"traceparent": TRACEPARENT})
    assert response.status_code == 403
    root = spans_by_name(rig)["gateway.invoke"]
    assert root.end_time is not None
    assert root.status.status_code is StatusCode.ERROR
    assert [event.name for event in root.events] == ["exception"]
    assert EMAIL not in str(root.events[0].attributes)
    assert trace.get_current_span() is before


def test_the_default_sampler_keeps_trace_ids_but_records_nothing_until_an_exporter_is_added() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    sampler = ExportAwareSampler()
    provider = TracerProvider(sampler=sampler)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("off") as span:
        assert not span.is_recording()
        assert span.get_span_context().is_valid
    sampler.enable()
    with tracer.start_as_current_span("on") as span:
        assert span.is_recording()
    assert [s.name for s in exporter.get_finished_spans()] == ["on"]


# ---------------------------------------------------------------- logs


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


async def test_json_logs_carry_the_trace_id_and_no_pii(rig: Rig, json_logs: io.StringIO) -> None:
    async def explode(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        logging.getLogger("forecourt.adapters.test").info("working on a lead for %s", ctx.dealership_id)
        raise RuntimeError(f"driver failed for {payload['customer']['email']}")

    register_action(rig.services, "test.explode", explode, properties={"customer": {"type": "object"}})
    response = await rig.call(
        "test.explode",
        {"dealership_id": TOYOTA, "customer": {"email": EMAIL}},
        headers={"traceparent": TRACEPARENT},
    )
    assert (response.status_code, response.json()["status"]["error"]["code"]) == (500, "internal_error")
    assert EMAIL not in response.text
    assert "driver failed" not in response.text
    lines = [json.loads(line) for line in json_logs.getvalue().splitlines() if line.strip()]
    ours = [entry for entry in lines if entry["logger"].startswith("forecourt")]
    assert {"forecourt.adapters.test", "forecourt.gateway.pipeline"} <= {entry["logger"] for entry in ours}
    for entry in ours:
        assert entry["trace_id"] == TRACE
        assert {"time", "level", "logger", "message"} <= set(entry)
    assert EMAIL not in json_logs.getvalue()
    failure = next(e for e in ours if e["logger"] == "forecourt.gateway.pipeline")
    assert failure["exc_type"] == "RuntimeError"


# ---------------------------------------------------------------- metrics


async def test_metrics_expose_calls_durations_denials_rate_limits_and_cache_hits(rig: Rig) -> None:
    from .support import set_policy

    await set_policy(rig.services.store, MOTOR, rate_limits={"inventory.facets": 1})
    rig.gateway.tenancy.invalidate()
    await rig.call("dealer.information", {"dealership_id": TOYOTA})
    await rig.call("dealer.information", {"dealership_id": TOYOTA})
    await rig.call("leads.list", {"dealership_id": BAY_SJ})
    await rig.call("leads.list", {"dealership_id": TOYOTA}, key=None)
    await rig.call("inventory.facets", {"dealership_id": TOYOTA})
    await rig.call("inventory.facets", {"dealership_id": TOYOTA})
    response = await rig.client.get("/metrics")
    assert response.status_code == 200
    text = response.text
    assert (
        'forecourt_calls_total{action="dealer.information",adapter="dealer-data",company="demo-motor-group",'
        'model="-",status="200"} 2.0'
    ) in text
    assert 'forecourt_call_duration_seconds_bucket{action="dealer.information",adapter="dealer-data"' in text
    assert 'forecourt_denials_total{action="leads.list",reason="tenancy"} 1.0' in text
    assert 'forecourt_denials_total{action="leads.list",reason="auth.unauthorized"} 1.0' in text
    assert 'forecourt_denials_total{action="inventory.facets",reason="rate_limited"} 1.0' in text
    assert 'forecourt_rate_limited_total{scope="action"} 1.0' in text
    assert 'forecourt_cache_hits_total{action="dealer.information"} 1.0' in text


async def test_a_model_name_is_only_a_metric_label_once_the_call_succeeds(rig: Rig) -> None:
    register_action(
        rig.services,
        "test.generate",
        action_type="model.invoke",
        properties={"model": {"type": "string"}},
        scope="amcp:models:read",
        dealer_scoped=False,
    )
    await rig.call("test.generate", {"model": "gemini-2.5-flash"})
    await rig.call("test.generate", {"model": "made-up-by-an-attacker"}, key=None)
    text = (await rig.client.get("/metrics")).text
    assert 'model="gemini-2.5-flash"' in text
    assert "made-up-by-an-attacker" not in text


async def test_calls_are_counted_under_their_labels_when_the_memo_of_series_starts_again(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from forecourt.gateway.telemetry import CallSeries

    series = CallSeries(rig.gateway.metrics, kept=1)  # every new series empties the memo
    monkeypatch.setattr(rig.gateway, "_series", series)
    for action in ("dealer.information", "inventory.facets", "dealer.information", "inventory.facets"):
        await rig.call(action, {"dealership_id": TOYOTA})
    text = (await rig.client.get("/metrics")).text
    for action in ("dealer.information", "inventory.facets"):
        assert (
            f'forecourt_calls_total{{action="{action}",adapter="dealer-data",company="demo-motor-group",'
            'model="-",status="200"} 2.0'
        ) in text
        assert f'forecourt_call_duration_seconds_count{{action="{action}",adapter="dealer-data"' in text
