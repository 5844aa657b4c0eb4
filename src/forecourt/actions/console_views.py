"""The console's read models: companies, the overview, the audit explorer, inventory and what members see.

Actions of the ``console`` adapter. They run through the gateway like every admin action (authenticated,
rate-limited, audited with the caller's surface); only the company's administrators, or the operator, may
call them. Nothing here returns a value a redaction policy removed: audit records are stored redacted.
"""

from __future__ import annotations

import importlib
import statistics
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from forecourt.actions import console_uploads
from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.console_common import (
    DEALERSHIP,
    SHORT,
    console_action,
    is_operator,
    one_dealership,
    require_admin,
    text,
)
from forecourt.contract import Principal
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.errors import CompanyNotFound, Forbidden, InvalidParams, NotFound
from forecourt.store import console as queries
from forecourt.store import console_pages
from forecourt.store.console_pages import CallFact

if TYPE_CHECKING:
    from forecourt.gateway.pipeline import Gateway

ADAPTER_ID = "console"
_TIME = {"type": "string", "format": "date-time"}
AUDIT_FILTERS: dict[str, Any] = {
    "since": _TIME,
    "until": _TIME,
    "member_id": SHORT,
    "action": SHORT,
    "surface": SHORT,
    "outcome": {"enum": ["ok", "error", "denied", "pending", "cancelled"]},
    "dealership_id": SHORT,
    "trace_id": SHORT,
    "record_id": SHORT,
}

CONSOLE_ACTIONS: tuple[Action, ...] = (
    console_action(
        "console.companies.list",
        "The companies the caller administers (every company for the operator).",
        {},
        [],
        adapter=ADAPTER_ID,
        write=False,
        company=False,
    ),
    console_action(
        "console.overview",
        "Calls per minute, error rate, p50/p99 per front door and per adapter, top callers, denials, "
        "rate-limited calls and CRM deliveries pending/failed over the last minutes.",
        {"minutes": {"type": "integer", "minimum": 5, "maximum": 1440}},
        [],
        adapter=ADAPTER_ID,
        write=False,
    ),
    console_action(
        "console.audit.search",
        "Audit records of the company matching the filters, newest first (stored redacted).",
        {**AUDIT_FILTERS, "limit": {"type": "integer", "minimum": 1, "maximum": 5000}},
        [],
        adapter=ADAPTER_ID,
        write=False,
    ),
    console_action(
        "console.inventory.import",
        "Import an inventory feed into one rooftop: CSV or JSON text (`feed`), or a file uploaded to the console "
        "(`upload`, its one-time handle); answers the import report.",
        {
            "dealership_id": DEALERSHIP,
            "feed": {"type": "string", "minLength": 1, "maxLength": 4_000_000, "x-audit": "size"},
            "upload": {"type": "string", "pattern": "^upl_[A-Za-z0-9_-]{20,64}$"},
            "filename": SHORT,
            "full": {"type": "boolean"},
        },
        ["dealership_id"],
        adapter=ADAPTER_ID,
        write=True,
    ),
    console_action(
        "console.tools.list",
        "What one member sees over MCP: tool names, descriptions, input schemas, and their size in tokens.",
        {"member_id": SHORT, "dealership_id": SHORT},
        ["member_id"],
        adapter=ADAPTER_ID,
        write=False,
    ),
)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 2)


def _latency(groups: Mapping[str, list[CallFact]]) -> list[dict[str, Any]]:
    rows = []
    for key, records in sorted(groups.items()):
        durations = [r.duration_ms for r in records]
        errors = sum(1 for r in records if r.result_class == "error")
        rows.append(
            {
                "name": key,
                "calls": len(records),
                "errors": errors,
                "error_rate": round(errors / len(records), 4) if records else 0.0,
                "p50_ms": round(statistics.median(durations), 2) if durations else 0.0,
                "p99_ms": _percentile(durations, 0.99),
            }
        )
    return rows


async def last_scheduled(store: Any, dealership_ids: set[str]) -> dict[str, dict[str, Any]]:
    """The last run of each rooftop's scheduled feed, where scheduled imports are installed.

    Scheduled feeds (``forecourt.inventory_import.schedule``) are optional here: the console reads only
    ``list_sources(store)`` and a few fields of each source, and shows nothing when the module is absent.
    """
    try:
        schedule = importlib.import_module("forecourt.inventory_import.schedule")
    except ImportError:
        return {}
    list_sources = getattr(schedule, "list_sources", None)
    if list_sources is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for source in await list_sources(store):
        if getattr(source, "dealership_id", None) not in dealership_ids:
            continue
        last_run = getattr(source, "last_run_at", None)
        next_run = getattr(source, "next_run_at", None)
        report = getattr(source, "last_report", None) or {}
        out[source.dealership_id] = {
            "host": urlsplit(str(getattr(source, "url", ""))).hostname or "",
            "enabled": bool(getattr(source, "enabled", True)),
            "last_run_at": last_run.isoformat() if last_run else None,
            "last_status": getattr(source, "last_status", None),
            "next_run_at": next_run.isoformat() if next_run else None,
            "rejected": report.get("rejected") if isinstance(report, dict) else None,
        }
    return out


def audit_filter(payload: Mapping[str, Any]) -> queries.AuditFilter:
    """The audit explorer's filters of ``payload`` (the company's records only)."""
    try:
        since = parse_rfc3339(str(payload["since"])) if payload.get("since") else None
        until = parse_rfc3339(str(payload["until"])) if payload.get("until") else None
    except ValueError as exc:
        raise InvalidParams("A time filter is invalid.") from exc
    return queries.AuditFilter(
        [str(payload["company_id"])],
        since=since,
        until=until,
        member_id=text(payload, "member_id"),
        action=text(payload, "action"),
        surface=text(payload, "surface"),
        result_class=text(payload, "outcome"),
        dealership_id=text(payload, "dealership_id"),
        trace_id=text(payload, "trace_id"),
        record_id=text(payload, "record_id"),
    )


def estimate_tokens(text_value: str) -> int:
    """A rough token count (about four characters per token for English and JSON)."""
    return max(1, (len(text_value) + 3) // 4)


def tool_view(action: Action) -> dict[str, Any]:
    """An action as an MCP client sees it (name, description, input schema), with its size."""
    name = action.name.replace(".", "_") if action.name.startswith("aap.") else action.name
    tool = {"name": name, "description": action.description, "inputSchema": action.input_schema}
    size = estimate_tokens(orjson.dumps(tool).decode())
    return {**tool, "tokens": size, "side_effect": action.side_effect}


class ConsoleViews:
    """The ``console`` adapter."""

    id = ADAPTER_ID

    def __init__(self, catalogue: Catalogue, gateway: Gateway | None = None) -> None:
        self.catalogue = catalogue
        self.gateway = gateway
        self._handlers: dict[str, Callable[[Mapping[str, Any], ExecutionContext], Awaitable[Any]]] = {
            "console.companies.list": self._companies,
            "console.overview": self._overview,
            "console.audit.search": self._audit,
            "console.inventory.import": self._import,
            "console.tools.list": self._tools,
        }

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Check the caller administers the company, then answer."""
        if "company_id" in payload:
            require_admin(context, str(payload["company_id"]))
        output = await self._handlers[context.action.name](payload, context)
        return AdapterResult(output=output, result_type="admin.result")

    async def _companies(self, _: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        member = ctx.principal.member
        if not is_operator(ctx) and (member is None or not member.is_admin):
            raise Forbidden("Only the company's administrators may do this.")
        async with ctx.store.read() as uow:
            companies = await uow.tenancy.list_companies()
        if not is_operator(ctx):
            companies = [c for c in companies if c.id == ctx.principal.company_id]
        return {"items": [c.model_dump(mode="json") for c in companies], "operator": is_operator(ctx)}

    async def _overview(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        company_id = str(payload["company_id"])
        minutes = int(payload.get("minutes", 60))
        since = ctx.now - timedelta(minutes=minutes)
        records = await console_pages.call_facts(ctx.store, company_id, since, limit=5000)
        per_minute = [0] * minutes
        errors_per_minute = [0] * minutes
        for r in records:
            slot = minutes - 1 - int((ctx.now - r.occurred_at).total_seconds() // 60)
            if 0 <= slot < minutes:
                per_minute[slot] += 1
                errors_per_minute[slot] += r.result_class == "error"
        by_surface: dict[str, list[CallFact]] = defaultdict(list)
        by_adapter: dict[str, list[CallFact]] = defaultdict(list)
        for r in records:
            by_surface[r.surface].append(r)
            action = self.catalogue.get(r.action)
            by_adapter[action.adapter if action else "-"].append(r)
        callers = Counter(r.member_id or "anonymous" for r in records)
        denials = Counter(r.error_code or "denied" for r in records if r.result_class == "denied")
        rate_limited = sum(1 for r in records if r.error_code == "rate_limited")
        granted = None if is_operator(ctx) else list(ctx.principal.dealership_ids)
        deliveries = await console_pages.delivery_counts(ctx.store, company_id, granted)
        total = len(records)
        errors = sum(1 for r in records if r.result_class == "error")
        return {
            "company_id": company_id,
            "minutes": minutes,
            "calls": total,
            "calls_per_minute": round(total / minutes, 2),
            "error_rate": round(errors / total, 4) if total else 0.0,
            "series": per_minute,
            "error_series": errors_per_minute,
            "front_doors": _latency(by_surface),
            "adapters": _latency(by_adapter),
            "top_callers": [{"member_id": m, "calls": n} for m, n in callers.most_common(8)],
            "denials": [{"code": c, "calls": n} for c, n in denials.most_common(8)],
            "denied": sum(denials.values()),
            "rate_limited": rate_limited,
            "deliveries": {
                "pending": deliveries.get("pending", 0),
                "failed": deliveries.get("failed", 0),
                "delivered": deliveries.get("delivered", 0),
            },
        }

    async def _audit(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        found = audit_filter(payload)
        records = await queries.audit_search(ctx.store, found, limit=int(payload.get("limit", 200)))
        return {"items": [r.model_dump(mode="json") for r in records]}

    async def _import(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        from forecourt.inventory_import import import_feed
        from forecourt.inventory_import.watch import reporter

        company_id = str(payload["company_id"])
        dealership = await one_dealership(ctx.store, ctx, company_id, str(payload["dealership_id"]))
        filename = text(payload, "filename")
        if text(payload, "upload"):
            data = console_uploads.read(str(payload["upload"]))
        elif text(payload, "feed"):
            data = str(payload["feed"]).encode()
        else:
            raise InvalidParams("Give the feed (`feed`) or an upload's handle (`upload`).")
        report = await import_feed(
            ctx.store,
            data,
            dealership.id,
            full=bool(payload.get("full", False)),
            now=ctx.now,
            filename=filename,
            progress=reporter(),
        )
        return report.model_dump(mode="json")

    async def _tools(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        company_id = str(payload["company_id"])
        async with ctx.store.read() as uow:
            if await uow.tenancy.get_company(company_id) is None:
                raise CompanyNotFound()
            member = await uow.tenancy.get_member(company_id, str(payload["member_id"]))
        if member is None or self.gateway is None:
            raise NotFound("Member not found.")
        principal = Principal.of_member(member)
        dealership_id = text(payload, "dealership_id")
        allowed = await self.gateway.allowed_actions(principal, dealership_id)
        tools = [tool_view(a) for a in allowed if a.domain != "admin" and not a.name.startswith("admin.")]
        return {
            "member_id": member.id,
            "member": member.model_dump(mode="json"),
            "tools": tools,
            "count": len(tools),
            "tokens": sum(t["tokens"] for t in tools),
            "tokenizer": "estimate: 4 characters per token",
        }


def register_console_views(catalogue: Catalogue, gateway: Gateway | None = None) -> ConsoleViews:
    """Add the console's read actions and their adapter to ``catalogue``."""
    for action in CONSOLE_ACTIONS:
        catalogue.add(action)
    adapter = ConsoleViews(catalogue, gateway)
    catalogue.add_adapter(adapter)
    return adapter
