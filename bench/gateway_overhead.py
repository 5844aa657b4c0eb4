"""What the gateway adds to a call: the full pipeline on a no-op action versus the adapter called directly.

Both run in one process on one event loop. The pipeline path is everything a real call passes:
API-key authentication (cached lookup), claims, JSON Schema validation, dealership resolution,
authorization (policy), three rate-limit counters, credential step, the adapter under timeout and
bulkhead, output redaction, an audit record (written in batches by the background writer, on
SQLite) and Prometheus metrics. Tracing uses the process's SDK tracer provider: by default without an
exporter (spans carry trace ids but are not recorded, as in a deployment without OTLP); with
``--tracing`` every span is recorded and handed to a span processor that discards it, which is what
OTLP export costs on the request path (the batch exporter works off it).

Examples::

    .venv/bin/python bench/gateway_overhead.py --calls 20000
    .venv/bin/python bench/gateway_overhead.py --calls 20000 --tracing

Prints p50/p99/mean per call for both paths and the difference, as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from forecourt.bootstrap import build_services
from forecourt.contract import Action, AdapterResult, ExecutionContext
from forecourt.domain.tenancy import Company, Dealership, Member, Policy, Profile
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.base import Credentials, Invocation
from forecourt.gateway.telemetry import add_span_processor
from forecourt.settings import Settings
from forecourt.store import upgrade_async

COMPANY = "bench-co"
DEALER = "bench-rooftop"


class NoopAdapter:
    """Returns a constant."""

    id = "bench-noop"

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        return AdapterResult(output={"ok": True})


NOOP = Action(
    name="bench.noop",
    type="tool.run",
    title="No-op",
    description="Does nothing.",
    input_schema={
        "type": "object",
        "properties": {"dealership_id": {"type": "string"}, "n": {"type": "integer"}},
        "additionalProperties": False,
    },
    output_schema=None,
    adapter=NoopAdapter.id,
    scope="amcp:inventory:read",
)


async def _seed(settings: Settings) -> str:
    from forecourt.store import open_store

    store = open_store(settings)
    try:
        async with store.transaction() as uow:
            await uow.tenancy.upsert_profile(Profile(id="bench", name="Bench"))
            await uow.tenancy.upsert_company(Company(id=COMPANY, profile_id="bench", name="Bench"))
            await uow.tenancy.upsert_dealership(Dealership(id=DEALER, company_id=COMPANY, name="Bench rooftop"))
            await uow.tenancy.upsert_policy(Policy(id="default", company_id=COMPANY))
            await uow.tenancy.upsert_member(
                Member(
                    id="agent",
                    company_id=COMPANY,
                    profile_id="bench",
                    name="Agent",
                    allowed_tools=("*",),
                    scopes=("amcp:inventory:read",),
                    dealership_ids=(DEALER,),
                )
            )
        from forecourt.gateway.backends.memory import MemoryRevocationList

        issued = await ApiKeyService.from_settings(settings, store, MemoryRevocationList()).create(COMPANY, "agent")
        return issued.key
    finally:
        await store.close()


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 4),
        "p99_ms": round(ordered[int(len(ordered) * 0.99)] * 1000, 4),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 4),
    }


class _Discard(SpanProcessor):
    """Receives every finished span and drops it."""

    def on_end(self, span: ReadableSpan) -> None:
        del span


async def run(calls: int, warmup: int, directory: Path, *, tracing: bool = False) -> dict[str, Any]:
    """Time ``calls`` invocations each way after ``warmup`` untimed ones."""
    url = f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    settings = Settings(
        database_url=url,
        rate_member_per_minute=10**9,
        rate_company_per_minute=10**9,
        rate_action_per_minute=10**9,
        log_level="WARNING",
    )
    await upgrade_async(url)
    key = await _seed(settings)
    services = build_services(settings)
    if tracing:
        assert add_span_processor(_Discard())
    services.catalogue.add(NOOP)
    adapter = NoopAdapter()
    services.catalogue.add_adapter(adapter)
    await services.start()
    gateway = services.gateway
    try:
        creds = Credentials(bearer=key, peer_address="127.0.0.1")

        async def through_gateway(i: int) -> None:
            await gateway.invoke(
                Invocation(
                    action="bench.noop", payload={"dealership_id": DEALER, "n": i}, credentials=creds, surface="rest"
                )
            )

        principal = await gateway.principal_for(Invocation(action="bench.noop", payload={}, credentials=creds))

        async def direct(i: int) -> None:
            ctx = ExecutionContext(
                action=NOOP,
                principal=principal,
                dealership_id=DEALER,
                company_id=COMPANY,
                store=services.store,
                settings=settings,
                now=gateway.clock(),
                trace_id="bench",
            )
            await adapter.execute({"dealership_id": DEALER, "n": i}, ctx)

        results: dict[str, list[float]] = {"gateway": [], "direct": []}
        for name, fn in (("direct", direct), ("gateway", through_gateway)):
            for i in range(warmup):
                await fn(i)
            samples = results[name]
            for i in range(calls):
                started = time.perf_counter()
                await fn(i)
                samples.append(time.perf_counter() - started)
        await services.audit.flush()
        async with services.store.transaction() as uow:
            audited = await uow.audit.count(COMPANY)
    finally:
        await services.close()
    gw, dr = _stats(results["gateway"]), _stats(results["direct"])
    return {
        "calls": calls,
        "tracing": "recorded" if tracing else "ids only (no exporter)",
        "gateway": gw,
        "direct": dr,
        "added_p50_ms": round(gw["p50_ms"] - dr["p50_ms"], 4),
        "added_p99_ms": round(gw["p99_ms"] - dr["p99_ms"], 4),
        "audit_records": audited,
    }


def main() -> None:
    """Parse arguments, run, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--warmup", type=int, default=1_000)
    parser.add_argument("--tracing", action="store_true", help="Record every span (as with OTLP export).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="forecourt-bench-") as tmp:
        report = asyncio.run(run(args.calls, args.warmup, Path(tmp), tracing=args.tracing))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
