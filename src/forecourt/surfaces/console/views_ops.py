"""Leads and deliveries, inventory, approvals and upstream MCP servers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.datastructures import UploadFile
from starlette.responses import Response, StreamingResponse

from forecourt.actions import console_uploads as uploads
from forecourt.domain.people import LeadStatus
from forecourt.errors import ForecourtError, InvalidParams
from forecourt.inventory_import.watch import reporting
from forecourt.surfaces.console.core import SECURITY_HEADERS, Page
from forecourt.surfaces.console.tables import listing

logger = logging.getLogger(__name__)

TASK_ROOFTOPS = 10
"""Workflow tasks are listed for every rooftop of a company with at most this many, else for the one chosen."""
LEAD_STATUSES = tuple(s.value for s in LeadStatus)


async def leads(page: Page) -> Response:
    """The company's leads, masked: searched, filtered by rooftop, status and source, sorted and paged."""
    table = await listing(page, "leads", "leads", filters=("dealership_id", "status", "source"))
    return page.render("leads.html", leads=table, statuses=LEAD_STATUSES, active="leads")


async def deliveries(page: Page) -> Response:
    """CRM deliveries of the company's rooftops: failed and pending ones found by filter, retried in place."""
    table = await listing(page, "deliveries", "deliveries", filters=("status", "kind", "dealership_id"))
    return page.render("deliveries.html", deliveries=table, active="deliveries")


async def lead(page: Page) -> Response:
    """One lead: masked by default; a POST with ``reveal`` shows the contact (and is audited as such)."""
    params = page.request.path_params
    reveal = page.form is not None and page.field("reveal") == "1"
    payload = {
        "company_id": page.company,
        "dealership_id": params["dealership_id"],
        "lead_id": params["lead_id"],
        "reveal": reveal,
    }
    found = await page.call("console.leads.show", payload)
    return page.render("lead.html", lead=found, active="leads")


async def retry_delivery(page: Page) -> Response:
    """Make a delivery due now."""
    params = page.request.path_params
    payload = {
        "company_id": page.company,
        "dealership_id": params["dealership_id"],
        "delivery_id": params["delivery_id"],
    }
    await page.call("console.deliveries.retry", payload)
    back = page.field("back") or "leads"
    known = back.startswith(("leads", "deliveries"))
    return page.redirect(back if known else "leads", flash="Delivery queued to retry now.")


async def inventory(page: Page) -> Response:
    """Per rooftop counts and freshness, a page at a time; each rooftop's feed upload opens on its own page."""
    table = await listing(page, "inventory", "inventory")
    return page.render("inventory.html", rooftops=table, active="inventory")


async def _rooftop(page: Page) -> dict[str, Any]:
    """The rooftop of the path, with its inventory counts (one row read)."""
    dealership_id = page.request.path_params["dealership_id"]
    found = await page.call("console.inventory.page", {"company_id": page.company, "id": dealership_id, "limit": 1})
    if not found["items"]:
        raise InvalidParams("No such rooftop.")
    return dict(found["items"][0])


async def upload_form(page: Page) -> Response:
    """The feed upload of one rooftop (with its progress bar), opened from the inventory table."""
    return page.render("upload.html", rooftop=await _rooftop(page), report=None, active="inventory")


async def upload(page: Page) -> Response:
    """Import an uploaded feed; answers the report (the fragment alone for the progress-bar script).

    The file arrives spooled to disk by the multipart parser and the importer reads it from there. The request
    guard holds a console upload to ``feed_max_bytes`` (the scheduled feeds' limit), not to ``max_body_bytes``:
    with a Content-Length it passes unbuffered, without one (chunked) it is spooled and counted first; past the
    limit either is refused with the same 413 ``payload_too_large`` before this view runs.
    With ``X-Console-Progress: 1`` the answer streams as JSON lines while the import runs: one
    ``{"phase": "import", "done": n, "total": m}`` per batch written, then ``{"phase": "done", "html": report}``
    or ``{"phase": "error", "code", "message"}`` (the console script draws the bar from them).
    """
    assert page.form is not None
    feed = page.form.get("feed")
    if not isinstance(feed, UploadFile) or not feed.filename:
        raise InvalidParams("Choose a feed file.")
    upload_id = uploads.keep(feed.file)
    payload = {
        "company_id": page.company,
        "dealership_id": page.request.path_params["dealership_id"],
        "upload": upload_id,
        "filename": (feed.filename or "feed.csv")[:200],
        "full": page.field("full") == "on",
    }
    if page.request.headers.get("x-console-progress") == "1":
        lines = _import_lines(page, payload, upload_id)
        return StreamingResponse(lines, media_type="application/x-ndjson", headers=SECURITY_HEADERS)
    try:
        report = await page.call("console.inventory.import", payload)
    finally:
        uploads.drop(upload_id)
    if page.request.headers.get("x-console-fragment") == "1":
        return page.render("_import_report.html", report=report)
    return page.render("upload.html", rooftop=await _rooftop(page), report=report, active="inventory")


async def _import_lines(page: Page, payload: dict[str, Any], upload_id: str) -> AsyncIterator[bytes]:
    """The import's progress as it runs, then its report: JSON lines for the console's progress bar."""
    lines: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def progress(done: int, total: int) -> None:
        lines.put_nowait({"phase": "import", "done": done, "total": total})

    async def run() -> Any:
        with reporting(progress):
            return await page.call("console.inventory.import", payload)

    task = asyncio.create_task(run(), name="console-import")
    try:
        while not task.done():
            waiter = asyncio.ensure_future(lines.get())
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if waiter.done():
                yield orjson.dumps(waiter.result()) + b"\n"
            else:
                waiter.cancel()
        while not lines.empty():
            yield orjson.dumps(lines.get_nowait()) + b"\n"
        try:
            report = task.result()
        except ForecourtError as exc:
            yield orjson.dumps({"phase": "error", "code": exc.code, "message": exc.message}) + b"\n"
            return
        except Exception:  # top of the surface: the client gets a line, the log the cause
            logger.exception("console feed import failed")
            yield orjson.dumps({"phase": "error", "code": "internal", "message": "The import failed."}) + b"\n"
            return
        html = page.core.env.get_template("_import_report.html").render(report=report, page=page)
        yield orjson.dumps({"phase": "done", "html": html}) + b"\n"
    finally:
        # A client that goes away ends the import; it writes in one transaction, so nothing is half-written.
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        uploads.drop(upload_id)


async def approvals(page: Page) -> Response:
    """Agents' calls held by policy (arguments redacted, rooftop, the lead or customer touched), a page at a time,
    and the workflow tasks waiting at one rooftop (every rooftop when the company has a few)."""
    held = await listing(page, "approvals", "approvals", filters=("status", "member_id", "dealership_id"))
    few = await page.call("console.rooftops.page", {"company_id": page.company, "limit": TASK_ROOFTOPS})
    chosen = page.request.query_params.get("task_rooftop", "").strip()[:128]
    if chosen:
        rooftop_ids = [chosen]
    elif not few["has_next"]:
        rooftop_ids = [r["id"] for r in few["items"]]
    else:
        rooftop_ids = []
    waiting: list[dict[str, Any]] = []
    problems: list[str] = []
    for dealership_id in rooftop_ids:
        try:
            runs = await page.call("workflow.list_runs", {"dealership_id": dealership_id, "status": "input_required"})
        except ForecourtError as exc:
            problems.append(f"{dealership_id}: {exc.message}")
            continue
        for run in runs.get("items", [])[:TASK_ROOFTOPS]:
            detail = await page.call("workflow.get", {"dealership_id": dealership_id, "run_id": run["run_id"]})
            for task in detail.get("waiting_tasks", []):
                waiting.append({"run": detail, "task": task, "dealership_id": dealership_id})
    return page.render(
        "approvals.html",
        waiting=waiting,
        held=held,
        problems=problems,
        task_rooftop=chosen,
        every_rooftop=not few["has_next"],
        active="approvals",
    )


async def complete_task(page: Page) -> Response:
    """Approve or reject a workflow user task with a comment (``workflow.complete_task``)."""
    decision = page.field("decision") or "approve"
    data: dict[str, Any] = {"comment": page.field("comment")[:500], "decided_in": "console"}
    outcome_field = page.field("outcome_field")
    if outcome_field:
        data[outcome_field[:64]] = page.field("outcome") or decision
    else:
        data["decision"] = decision
    payload = {
        "dealership_id": page.field("dealership_id"),
        "run_id": page.field("run_id"),
        "task_id": page.field("task_id"),
        "data": data,
    }
    run = await page.call("workflow.complete_task", payload)
    return page.redirect("approvals", flash=f"Task completed; the run is now {run.get('status')}.")


async def decide_held(page: Page) -> Response:
    """Approve or reject a call held by policy."""
    payload = {
        "company_id": page.company,
        "approval_id": page.request.path_params["approval_id"],
        "decision": "reject" if page.field("decision") == "reject" else "approve",
        "comment": page.field("comment")[:500],
    }
    result = await page.call("approvals.decide", payload)
    if result.get("ran"):
        ended = "it ran" if result.get("outcome") == "ok" else f"it ran and failed: {result.get('outcome')}"
        return page.redirect("approvals", flash=f"Call approved; {ended}.")
    return page.redirect("approvals", flash=f"Call {result['status']}.")


async def upstreams(page: Page) -> Response:
    """The company's upstream MCP servers, their state and tools."""
    items = (await page.call("admin.upstreams.list", {"company_id": page.company}))["items"]
    tested = page.field("tested")
    return page.render("upstreams.html", items=items, tested=tested, active="upstreams")


async def save_upstream(page: Page) -> Response:
    """Register an upstream MCP server (Streamable HTTP)."""
    spec = {
        "id": page.field("id").strip(),
        "url": page.field("url").strip(),
        "description": page.field("description").strip()[:200],
        "enabled": True,
    }
    if page.field("namespace").strip():
        spec["namespace"] = page.field("namespace").strip()
    await page.call("admin.upstreams.upsert", {"company_id": page.company, "upstream": spec})
    return page.redirect("upstreams", flash=f"Upstream {spec['id']} saved.")


async def upstream_action(page: Page) -> Response:
    """Enable, disable, test or remove an upstream."""
    upstream_id = page.request.path_params["upstream_id"]
    op = page.request.path_params["op"]
    c = {"company_id": page.company}
    if op == "delete":
        await page.call("admin.upstreams.delete", {**c, "upstream_id": upstream_id})
        return page.redirect("upstreams", flash=f"Upstream {upstream_id} removed.")
    items = (await page.call("admin.upstreams.list", c))["items"]
    current = next((u for u in items if u["id"] == upstream_id), None)
    if current is None:
        raise InvalidParams("No such upstream.")
    if op == "toggle":
        enabled = not current.get("enabled", True)
        await page.call("admin.upstreams.set_enabled", {**c, "upstream_id": upstream_id, "enabled": enabled})
        return page.redirect("upstreams", flash=f"Upstream {upstream_id} {'enabled' if enabled else 'disabled'}.")
    status = current.get("status", {})
    verdict = (
        "connected" if status.get("connected") else f"not connected ({status.get('last_error') or 'no answer yet'})"
    )
    return page.redirect("upstreams", flash=f"Test of {upstream_id}: {verdict}; {len(status.get('tools', []))} tools.")
