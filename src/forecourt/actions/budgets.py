"""Budget use of a company's members and API keys (docs/security.md): ``admin.budgets.usage`` (all of them) and
``console.budgets.page`` (one page of members or keys, for the console's budgets table).

The meters live in the gateway's shared backend, not the database: the ``budgets`` adapter is handed the
gateway's reader (``Protections.usage_report``) when bootstrap wires it. The console's page reads its members or
keys a page at a time in SQL (``store/console_pages.py``, as the console's other tables), then the meters of that
page only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.common import admin_action
from forecourt.actions.console_common import console_action, require_admin, text
from forecourt.store import console_pages as pages

ADAPTER_ID = "budgets"
UsageReport = Callable[[str, list[tuple[str, str]] | None], Awaitable[dict[str, Any]]]
"""``(company_id, names)`` → ``{"period", "resets_at", "currency", "items": [{scope, id, limits, used}]}``;
``names``: ``(scope, id)`` pairs (``None``: every member and key of the company)."""

USAGE = admin_action(
    "admin.budgets.usage",
    "This period's budget use of the company's members and API keys (calls, model tokens, model spend) and limits.",
    {},
    [],
    write=False,
    adapter=ADAPTER_ID,
    tags=("budgets",),
)
PAGE = console_action(
    "console.budgets.page",
    "A page of the company's members or API keys with this period's budget use and limits (search id, name; "
    "sort id, name or member, prefix, created_at).",
    {
        "scope": {"enum": ["member", "key"]},
        "q": {"type": "string", "maxLength": 100},
        "sort": {"type": "string", "maxLength": 40},
        "order": {"enum": ["asc", "desc"]},
        "offset": {"type": "integer", "minimum": 0, "maximum": pages.MAX_OFFSET},
        "limit": {"type": "integer", "minimum": 1, "maximum": pages.MAX_LIMIT},
    },
    [],
    adapter=ADAPTER_ID,
    write=False,
)


def _subject(scope: str, row: Mapping[str, Any]) -> dict[str, Any]:
    if scope == "member":
        return {"id": row["id"], "name": row.get("name"), "kind": row.get("kind"), "active": row.get("active")}
    return {
        "id": row["prefix"],
        "name": row.get("name"),
        "member_id": row.get("member_id"),
        "revoked": row.get("revoked_at") is not None,
    }


class BudgetsAdapter:
    """The ``budgets`` adapter."""

    id = ADAPTER_ID

    def __init__(self, report: UsageReport) -> None:
        self.report = report

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run ``admin.budgets.usage`` or ``console.budgets.page``."""
        company_id = str(payload["company_id"])
        require_admin(context, company_id)
        if context.action.name == PAGE.name:
            return AdapterResult(output=await self._page(company_id, payload, context), result_type="admin.result")
        return AdapterResult(output=await self.report(company_id, None), result_type="admin.result")

    async def _page(self, company_id: str, payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
        scope = "key" if payload.get("scope") == "key" else "member"
        offset, limit = int(payload.get("offset", 0)), int(payload.get("limit", 25))
        request = pages.PageRequest(
            q=(text(payload, "q") or "").strip() or None,
            sort=text(payload, "sort"),
            desc=payload.get("order") == "desc",
            offset=offset,
            limit=limit,
        )
        page = await pages.read_page(ctx.store, "members" if scope == "member" else "keys", company_id, None, request)
        subjects = [_subject(scope, r) for r in page.rows]
        report = await self.report(company_id, [(scope, str(s["id"])) for s in subjects])
        usage = {str(r["id"]): r for r in report["items"]}
        items = [
            {
                **s,
                "scope": scope,
                "used": usage.get(str(s["id"]), {}).get("used", {}),
                "limits": usage.get(str(s["id"]), {}).get("limits", {}),
            }
            for s in subjects
        ]
        return {
            "items": items,
            "offset": offset,
            "limit": limit,
            "has_next": page.has_next,
            "total": page.total,
            "total_capped": page.total_capped,
            "period": report.get("period"),
            "resets_at": report.get("resets_at"),
            "currency": report.get("currency"),
        }


def register_budgets(catalogue: Catalogue, report: UsageReport) -> None:
    """Add ``admin.budgets.usage``, ``console.budgets.page`` and their adapter."""
    actions: tuple[Action, ...] = (USAGE, PAGE)
    for action in actions:
        if catalogue.get(action.name) is None:
            catalogue.add(action)
    catalogue.add_adapter(BudgetsAdapter(report))


__all__ = ["ADAPTER_ID", "PAGE", "USAGE", "BudgetsAdapter", "register_budgets"]
