"""The console's tables, a page at a time: rooftops, members, keys, leads, deliveries, approvals, inventory, audit.

Every table action takes ``q`` (a search), its own filters, ``sort`` and ``order``, ``offset`` (at most 10,000)
and ``limit`` (at most 100), and answers ``{items, offset, limit, has_next, total, total_capped}``: one page read
in SQL (``store/console_pages.py``), never the whole table, whatever the size of the group. Personal data is
masked as on the lead pages (``console_leads.mask``); a lead search's text is audited by its size only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.console_common import SHORT, console_action, is_operator, require_admin, text
from forecourt.actions.console_leads import lead_row, mask
from forecourt.actions.console_views import AUDIT_FILTERS, audit_filter
from forecourt.errors import InvalidParams
from forecourt.store import console_pages as pages

ADAPTER_ID = "console_tables"
_PAGING: dict[str, Any] = {
    "q": {"type": "string", "maxLength": 100},
    "sort": {"type": "string", "maxLength": 40},
    "order": {"enum": ["asc", "desc"]},
    "offset": {"type": "integer", "minimum": 0, "maximum": pages.MAX_OFFSET},
    "limit": {"type": "integer", "minimum": 1, "maximum": pages.MAX_LIMIT},
}
_BOOL_TEXT = {"enum": ["", "yes", "no"]}
_FILTERS: dict[str, dict[str, Any]] = {
    "rooftops": {"public_agent": _BOOL_TEXT, "id": SHORT},
    "inventory": {"public_agent": _BOOL_TEXT, "id": SHORT},
    "members": {"kind": {"enum": ["", "agent", "person"]}, "is_admin": _BOOL_TEXT, "active": _BOOL_TEXT},
    "keys": {"member_id": SHORT, "state": {"enum": ["", "active", "revoked"]}},
    "leads": {"dealership_id": SHORT, "status": SHORT, "source": SHORT},
    "deliveries": {"dealership_id": SHORT, "status": SHORT, "kind": SHORT},
    "approvals": {"status": SHORT, "dealership_id": SHORT, "member_id": SHORT},
}
_DESCRIPTIONS = {
    "rooftops": "A page of the company's rooftops (search id, name, domain; sort id, name, public_agent).",
    "inventory": "A page of rooftops with vehicles, available vehicles and feed freshness (search id, name).",
    "members": "A page of the company's members (search id, name; filter kind, admin, active).",
    "keys": "A page of the company's API keys, never the keys (search prefix, member, name; filter state).",
    "leads": "A page of the company's leads, contact masked (search name, email, phone, lead id; filter rooftop, "
    "status, source).",
    "deliveries": "A page of CRM deliveries of the company's rooftops, bodies never shown (filter status, kind).",
    "approvals": "A page of calls held by policy, with redacted arguments, rooftop and the lead or customer touched.",
}


def _table_action(name: str) -> Action:
    props = {**_PAGING, **_FILTERS[name]}
    if name == "leads":
        props["q"] = {**_PAGING["q"], "x-audit": "size"}  # a search may be a person's name: never in the audit log
    return console_action(f"console.{name}.page", _DESCRIPTIONS[name], props, [], adapter=ADAPTER_ID, write=False)


TABLE_ACTIONS: tuple[Action, ...] = (
    *(_table_action(n) for n in _DESCRIPTIONS),
    console_action(
        "console.audit.page",
        "A page of the company's audit records matching the filters, newest first (stored redacted).",
        {**AUDIT_FILTERS, "offset": _PAGING["offset"], "limit": _PAGING["limit"]},
        [],
        adapter=ADAPTER_ID,
        write=False,
    ),
)


def _yes_no(value: Any) -> bool | None:
    return {"yes": True, "no": False}.get(str(value or ""))


def page_request(payload: Mapping[str, Any], filters: dict[str, Any]) -> pages.PageRequest:
    """The page the payload asks for."""
    return pages.PageRequest(
        q=(text(payload, "q") or "").strip() or None,
        filters=filters,
        sort=text(payload, "sort"),
        desc=payload.get("order") == "desc",
        offset=int(payload.get("offset", 0)),
        limit=int(payload.get("limit", 50)),
    )


def _answer(page: pages.PageOf, items: list[dict[str, Any]], payload: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "items": items,
        "offset": int(payload.get("offset", 0)),
        "limit": int(payload.get("limit", 50)),
        "has_next": page.has_next,
        "total": page.total,
        "total_capped": page.total_capped,
    }


def outcome_of(result: Any) -> str | None:
    """How a held call that ran ended: ``ok`` or its error code (``None`` before it ran), as ``admin_view``."""
    if not isinstance(result, dict):
        return None
    error = result.get("error")
    return str(error.get("code", "error")) if isinstance(error, dict) else "ok"


def _granted(ctx: ExecutionContext) -> list[str] | None:
    return None if is_operator(ctx) else list(ctx.principal.dealership_ids)


def _touches(args: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The lead and customer a held call's arguments name (``lead_id``, ``customer_id``, at the top or a level in)."""
    found: dict[str, str] = {}
    for scope in [args, *(v for v in args.values() if isinstance(v, dict))]:
        for key in ("lead_id", "customer_id"):
            value = scope.get(key)
            if isinstance(value, str) and value and key not in found:
                found[key] = value
    return found.get("lead_id"), found.get("customer_id")


class ConsoleTables:
    """The ``console_tables`` adapter."""

    id = ADAPTER_ID

    def __init__(self) -> None:
        self._handlers: dict[str, Callable[[Mapping[str, Any], ExecutionContext], Awaitable[Any]]] = {
            "console.rooftops.page": self._rooftops,
            "console.inventory.page": self._inventory,
            "console.members.page": self._members,
            "console.keys.page": self._keys,
            "console.leads.page": self._leads,
            "console.deliveries.page": self._deliveries,
            "console.approvals.page": self._approvals,
            "console.audit.page": self._audit,
        }

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Check the caller administers the company, then read one page."""
        require_admin(context, str(payload["company_id"]))
        output = await self._handlers[context.action.name](payload, context)
        return AdapterResult(output=output, result_type="admin.result")

    async def _read(
        self,
        name: str,
        payload: Mapping[str, Any],
        ctx: ExecutionContext,
        *,
        every_rooftop: bool = False,
        **filters: Any,
    ) -> Any:
        request = page_request(payload, filters)
        scope = None if every_rooftop else _granted(ctx)
        return await pages.read_page(ctx.store, name, str(payload["company_id"]), scope, request)

    async def _rooftops(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        public = _yes_no(payload.get("public_agent"))
        # Administration (as admin.dealerships.list): every rooftop of the company, whatever the key's rooftops.
        page = await self._read(
            "rooftops", payload, ctx, every_rooftop=True, public_agent=public, id=text(payload, "id")
        )
        return _answer(page, page.rows, payload)

    async def _inventory(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        from forecourt.actions.console_views import last_scheduled
        from forecourt.store import console as queries

        public = _yes_no(payload.get("public_agent"))
        page = await self._read("rooftops", payload, ctx, public_agent=public, id=text(payload, "id"))
        ids = [str(r["id"]) for r in page.rows]
        stats = await queries.inventory_freshness(ctx.store, ids) if ids else {}
        scheduled = await last_scheduled(ctx.store, set(ids))
        empty = {"vehicles": 0, "available": 0, "newest_verified_at": None, "oldest_verified_at": None}
        items = [
            {
                "dealership_id": r["id"],
                "name": r["name"],
                **stats.get(r["id"], empty),
                "scheduled": scheduled.get(r["id"]),
            }
            for r in page.rows
        ]
        return _answer(page, items, payload)

    async def _members(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        filters: dict[str, Any] = {k: _yes_no(payload.get(k)) for k in ("is_admin", "active")}
        page = await self._read("members", payload, ctx, kind=text(payload, "kind"), **filters)
        return _answer(page, page.rows, payload)

    async def _keys(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        page = await self._read(
            "keys", payload, ctx, member_id=text(payload, "member_id"), state=text(payload, "state")
        )
        return _answer(page, page.rows, payload)

    async def _leads(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        filters: dict[str, Any] = {k: text(payload, k) for k in ("dealership_id", "status", "source")}
        page = await self._read("leads", payload, ctx, **filters)
        states = await pages.delivery_states(ctx.store, [str(r["id"]) for r in page.rows])
        items = [{**lead_row(r, reveal=False), "delivery": states.get(str(r["id"]))} for r in page.rows]
        return _answer(page, items, payload)

    async def _deliveries(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        filters: dict[str, Any] = {k: text(payload, k) for k in ("dealership_id", "status", "kind")}
        page = await self._read("deliveries", payload, ctx, **filters)
        return _answer(page, page.rows, payload)

    async def _approvals(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        filters: dict[str, Any] = {k: text(payload, k) for k in ("status", "dealership_id", "member_id")}
        page = await self._read("approvals", payload, ctx, **filters)
        rows = page.rows  # scoped in SQL to the caller's rooftops (and calls addressed to none), as approvals.list
        touched = {r["id"]: _touches(r.get("args_redacted") or {}) for r in rows}
        lead_pairs = [
            (r["dealership_id"], touched[r["id"]][0]) for r in rows if r["dealership_id"] and touched[r["id"]][0]
        ]
        customer_pairs = [
            (r["dealership_id"], touched[r["id"]][1]) for r in rows if r["dealership_id"] and touched[r["id"]][1]
        ]
        found_leads = await pages.leads_of(ctx.store, lead_pairs)  # type: ignore[arg-type]
        found_customers = await pages.customers_of(ctx.store, customer_pairs)  # type: ignore[arg-type]
        items = []
        for r in rows:
            lead_id, customer_id = touched[r["id"]]
            lead = found_leads.get(lead_id or "")
            customer = found_customers.get(customer_id or "")
            who = lead or customer
            items.append(
                {
                    **{k: v for k, v in r.items() if k != "result"},
                    "outcome": outcome_of(r.get("result")),
                    "lead": {"id": lead["id"], "status": lead["status"]} if lead else None,
                    "customer": {
                        "id": (who.get("customer_id") if lead else who.get("id")),
                        "name": " ".join(filter(None, (mask(who.get("first_name")), mask(who.get("last_name"))))),
                        "email": mask(who.get("email")),
                    }
                    if who
                    else None,
                }
            )
        return _answer(page, items, payload)

    async def _audit(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        f = audit_filter(payload)
        offset, limit = int(payload.get("offset", 0)), int(payload.get("limit", 50))
        if offset > pages.MAX_OFFSET:
            raise InvalidParams("Narrow the filters: pages end 10,000 records in.")
        items, has_next = await pages.audit_page(ctx.store, f, offset=offset, limit=limit)
        return {"items": items, "offset": offset, "limit": limit, "has_next": has_next}


def register_console_tables(catalogue: Catalogue) -> None:
    """Add the console's table actions and their adapter."""
    for action in TABLE_ACTIONS:
        catalogue.add(action)
    catalogue.add_adapter(ConsoleTables())
