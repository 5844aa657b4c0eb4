"""The protections' pages: held upstream tool changes (a diff of each, approve or reject) and budget use.

Every read and every decision is the same gateway action the admin API and the CLI use
(``admin.upstreams.tool_changes``, ``admin.upstreams.approve_tools``, ``admin.upstreams.set_enabled``,
``console.budgets.page``), so the audit trail reads the same whichever door a person used.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from starlette.responses import Response

from forecourt.domain.money import currency_exponent
from forecourt.errors import InvalidParams
from forecourt.surfaces.console.core import Page
from forecourt.surfaces.console.tables import listing

TEXT_FIELDS = frozenset({"name", "title", "description"})
METERS = (("calls", "calls"), ("tokens_in", "tokens in"), ("tokens_out", "tokens out"), ("spend_minor", "spend"))
_WORDS = re.compile(r"\s+|[^\s]+")
_MAX_SHOWN = 20_000
"""Characters of one side of a diff drawn on the page (a hostile upstream can send megabytes)."""


def visible(text: str) -> str:
    """``text`` with invisible characters (zero-width, bidirectional, tags, controls) shown as ``⟦U+XXXX⟧``: a
    description's hidden instructions are what an administrator most needs to see."""
    out = []
    for ch in text[:_MAX_SHOWN]:
        if ch not in "\n\t" and unicodedata.category(ch) in ("Cf", "Cc", "Co", "Cn"):
            out.append(f"⟦U+{ord(ch):04X}⟧")
        else:
            out.append(ch)
    if len(text) > _MAX_SHOWN:
        out.append(f" … ({len(text) - _MAX_SHOWN:,} more characters not shown)")
    return "".join(out)


@dataclass(frozen=True)
class Segment:
    """A run of a diff: ``same``, ``removed`` or ``added``, and its text (escaped when the template draws it)."""

    kind: str
    text: str


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def word_diff(old: str, new: str) -> list[Segment]:
    """An inline diff of two texts, word by word (whitespace kept)."""
    a, b = _WORDS.findall(visible(old)), _WORDS.findall(visible(new))
    segments: list[Segment] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(Segment("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            segments.append(Segment("removed", "".join(a[i1:i2])))
        if j2 > j1:
            segments.append(Segment("added", "".join(b[j1:j2])))
    return segments


def line_diff(old: str, new: str) -> list[Segment]:
    """A line diff of two texts (a JSON Schema as indented JSON), every line shown."""
    a, b = visible(old).splitlines(), visible(new).splitlines()
    segments: list[Segment] = []
    for line in difflib.ndiff(a, b):
        tag, text = line[:2], line[2:]
        if tag == "? ":
            continue
        segments.append(Segment({"- ": "removed", "+ ": "added"}.get(tag, "same"), text))
    return segments


def field_diffs(change: dict[str, Any]) -> list[dict[str, Any]]:
    """Each differing field of a held change with its diff: words for text, lines for schemas and annotations."""
    out = []
    for name, values in sorted((change.get("fields") or {}).items()):
        old, new = _as_text(values.get("old")), _as_text(values.get("new"))
        inline = name in TEXT_FIELDS
        out.append(
            {
                "field": name,
                "inline": inline,
                "segments": word_diff(old, new) if inline else line_diff(old, new),
            }
        )
    return out


async def tool_changes(page: Page) -> Response:
    """The company's upstream tool changes that wait for an administrator, each with its diff."""
    company = {"company_id": page.company}
    upstreams = (await page.call("admin.upstreams.list", company))["items"]
    groups = []
    for upstream in upstreams:
        found = await page.call("admin.upstreams.tool_changes", {**company, "upstream_id": upstream["id"]})
        changes = [{**c, "diffs": field_diffs(c)} for c in found["items"]]
        if changes:
            groups.append({"upstream": upstream, "changes": changes})
    return page.render("tool_changes.html", groups=groups, active="tool_changes")


async def decide(page: Page) -> Response:
    """Approve held changes of an upstream (one tool, or all), or reject them by turning the upstream off."""
    upstream_id = page.request.path_params["upstream_id"]
    decision = page.request.path_params["decision"]
    payload: dict[str, Any] = {"company_id": page.company, "upstream_id": upstream_id}
    if decision == "approve":
        tool = page.field("tool").strip()
        if tool:
            payload["tools"] = [tool]
        approved = (await page.call("admin.upstreams.approve_tools", payload))["approved"]
        names = ", ".join(str(a["tool"]) for a in approved) or "nothing"
        return page.redirect("tool-changes", flash=f"Approved on {upstream_id}: {names}.")
    if decision == "reject":
        await page.call("admin.upstreams.set_enabled", {**payload, "enabled": False})
        return page.redirect(
            "tool-changes",
            flash=f"Upstream {upstream_id} disabled: none of its tools is offered until it is enabled again "
            "(Upstream MCP); its held changes stay here.",
        )
    raise InvalidParams("Approve or reject.", details={"decision": decision[:20]})


def _money(minor: int | None, currency: str | None) -> str:
    if minor is None:
        return "—"
    if not currency:
        return f"{minor:,} (minor units)"
    exponent = currency_exponent(currency)
    return f"{Decimal(minor).scaleb(-exponent):,.{exponent}f} {currency}"


def meter_cells(item: dict[str, Any], currency: str | None) -> list[dict[str, Any]]:
    """One row's meters as the budgets table shows them: used, the limit (if any), and whether it is spent."""
    used, limits = item.get("used") or {}, item.get("limits") or {}
    cells = []
    for meter, label in METERS:
        value, limit = int(used.get(meter, 0)), limits.get(meter)
        show = _money if meter == "spend_minor" else (lambda n, _c: "—" if n is None else f"{n:,}")
        cells.append(
            {
                "meter": label,
                "used": show(value, currency),
                "limit": show(limit, currency) if limit is not None else "no limit",
                "spent": limit is not None and value >= int(limit),
            }
        )
    return cells


async def budgets(page: Page) -> Response:
    """This period's budget use of the company's members or API keys against their limits, a page at a time."""
    table = await listing(page, "budgets", "budgets", filters=("scope",))
    currency = table.result.get("currency")
    rows = [{**item, "cells": meter_cells(item, currency)} for item in table.items]
    return page.render(
        "budgets.html",
        budgets=table,
        rows=rows,
        scope=table.values.get("scope", "member"),
        meters=[label for _, label in METERS],
        active="budgets",
    )
