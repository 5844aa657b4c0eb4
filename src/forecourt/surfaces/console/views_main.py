"""Overview, company switch, tools and the audit explorer."""

from __future__ import annotations

import csv
import io
import json
from typing import Any
from urllib.parse import urlencode

import orjson
from starlette.responses import Response

from forecourt import caching
from forecourt.actions.console_views import estimate_tokens
from forecourt.domain.tenancy import Member
from forecourt.errors import Forbidden, InvalidParams
from forecourt.surfaces.console.charts import bars
from forecourt.surfaces.console.core import SECURITY_HEADERS, Page, ToolsFor
from forecourt.surfaces.console.tables import listing
from forecourt.surfaces.mcp.tokens import count_tokens, list_json, tool_json

AUDIT_FIELDS = ("since", "until", "member_id", "action", "surface", "outcome", "dealership_id", "trace_id")
EXPORT_COLUMNS = (
    "id",
    "occurred_at",
    "company_id",
    "dealership_id",
    "member_id",
    "action",
    "surface",
    "result_class",
    "status_code",
    "error_code",
    "duration_ms",
    "trace_id",
    "args_digest",
    "args_redacted",
)


@caching.memo("console.tool_tokens", 4096)
def _tokens(text: str) -> int:
    """``cl100k_base`` tokens of a tool's (or a tool list's) JSON, by its text: the Tools page counts a member's
    tools once, not on every view (the whole list in two encodings took most of the page's 0.5 s)."""
    return count_tokens(text, "cl100k_base")


async def _overview_data(page: Page) -> dict[str, Any]:
    data: dict[str, Any] = await page.call("console.overview", {"company_id": page.company, "minutes": 60})
    data["bars"], data["top"] = bars(data["series"], data["error_series"])
    return data


async def overview(page: Page) -> Response:
    """The overview page; its panel refreshes itself every few seconds. The operator picks the company here."""
    companies = await companies_for(page)
    return page.render("overview.html", data=await _overview_data(page), companies=companies, active="overview")


async def overview_panel(page: Page) -> Response:
    """The overview's live panel alone (polled by console.js)."""
    return page.render("_overview_panel.html", data=await _overview_data(page))


async def switch_company(page: Page) -> Response:
    """The operator picks the company the pages are about; an id that is not one of theirs is refused."""
    wanted = page.field("company_id").strip()
    if not page.session.operator:
        raise Forbidden("Only the platform operator switches companies.")
    companies = await page.call("console.companies.list")
    if not any(c["id"] == wanted for c in companies["items"]):
        raise InvalidParams(f"There is no company {wanted[:128]!r}; pick one from the list.")
    page.session.company_id = wanted
    return page.redirect("", flash=f"Now viewing {page.session.company_id}.")


async def companies_for(page: Page) -> list[dict[str, Any]]:
    """Companies for the picker (operator only): id and name."""
    if not page.session.operator:
        return []
    items = (await page.call("console.companies.list"))["items"]
    return [{"id": c["id"], "name": c.get("name") or c["id"]} for c in items]


async def tools(page: Page, tried: dict[str, Any] | None = None) -> Response:
    """What each member sees over MCP, with its size in tokens; and the "try a tool" panel (``tried``: its answer)."""
    members = await page.call("console.members.page", {"company_id": page.company, "active": "yes", "limit": 100})
    wanted = page.value("try", "member_id") or page.field("member_id")
    chosen = wanted or (members["items"][0]["id"] if members["items"] else "")
    listing = None
    if chosen:
        listing = await page.call("console.tools.list", {"company_id": page.company, "member_id": chosen})
        if page.core.tools_for is not None:
            listing = await _as_listed(page.core.tools_for, listing)
    shown = None
    if tried is not None:
        shown = {
            **tried,
            "output_json": _pretty(tried.get("output"), 20_000),
            "audit_json": _pretty(tried.get("audit")),
        }
    return page.render(
        "tools.html",
        members=members["items"],
        more_members=members["has_next"],
        chosen=chosen,
        listing=listing,
        tried=shown,
        active="tools",
    )


def _pretty(value: Any, limit: int = 100_000) -> str:
    """Indented JSON, cut at ``limit`` characters (a page stays small whatever a tool answers)."""
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit:,} more characters)"


async def _as_listed(tools_for: ToolsFor, listing: dict[str, Any]) -> dict[str, Any]:
    """The member's tools exactly as ``tools/list`` shows them (toolset, policy, names, lean schemas), measured
    with a real tokenizer where one is installed (the ``dev`` extra), else estimated."""
    tools = await tools_for(Member.model_validate(listing["member"]))
    texts = [json.dumps(tool_json(t), separators=(",", ":"), ensure_ascii=False) for t in tools]
    try:
        counts = [_tokens(text) for text in texts]
        total, tokenizer = _tokens(list_json(tools)), "cl100k_base"
    except RuntimeError:  # no tokenizer installed: 4 characters a token
        counts = [estimate_tokens(text) for text in texts]
        total, tokenizer = sum(counts), "estimate: 4 characters per token"
    rows = [
        {
            "name": t.name,
            "description": t.description or "",
            "inputSchema": t.input_schema,
            "tokens": n,
            "side_effect": not bool(t.annotations and t.annotations.read_only_hint),
        }
        for t, n in zip(tools, counts, strict=True)
    ]
    return {
        "member_id": listing["member_id"],
        "tools": rows,
        "count": len(rows),
        "tokens": total,
        "tokenizer": tokenizer,
    }


def _filters(page: Page) -> dict[str, Any]:
    payload: dict[str, Any] = {"company_id": page.company}
    for name in AUDIT_FIELDS:
        value = page.field(name).strip()
        if value:
            payload[name] = value
    return payload


async def audit(page: Page) -> Response:
    """The audit explorer: filters, results, links to each record and to the exports."""
    filters = _filters(page)
    records = await listing(page, "audit", "audit", filters=AUDIT_FIELDS, limit=50)
    query = urlencode({k: v for k, v in filters.items() if k != "company_id"})
    return page.render("audit.html", records=records, filters=filters, query=query, fields=AUDIT_FIELDS, active="audit")


async def audit_record(page: Page) -> Response:
    """One audit record, every field (arguments as stored: redacted)."""
    record_id = page.request.path_params["record_id"]
    found = await page.call("console.audit.search", {"company_id": page.company, "record_id": record_id, "limit": 1})
    if not found["items"]:
        return page.render("error.html", status=404, error=None, message="No such audit record.")
    record = found["items"][0]
    pretty = orjson.dumps(record["args_redacted"], option=orjson.OPT_INDENT_2).decode()
    return page.render("audit_record.html", record=record, args=pretty, active="audit")


def _cell(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run as a formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


async def audit_export(page: Page) -> Response:
    """The filtered records as JSON lines or CSV (up to 5,000)."""
    fmt = page.request.path_params["fmt"]
    result = await page.call("console.audit.search", {**_filters(page), "limit": 5000})
    headers = {**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="audit.{fmt}"'}
    if fmt == "jsonl":
        body = b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in result["items"])
        return Response(body, media_type="application/x-ndjson", headers=headers)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(EXPORT_COLUMNS)
    for r in result["items"]:
        row = [_cell(r.get(c)) for c in EXPORT_COLUMNS]
        row[-1] = _cell(orjson.dumps(r["args_redacted"]).decode())
        writer.writerow(row)
    return Response(out.getvalue(), media_type="text/csv", headers=headers)
