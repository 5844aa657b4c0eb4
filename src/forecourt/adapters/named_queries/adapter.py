"""The ``named-queries`` adapter: ``db.query`` (run a named query) and ``admin.queries.*`` (define them).

``db.query`` takes ``{query_id, params, dealership_id?}``; callers never send SQL. The query is looked
up in the caller's company, compiled with the parameters bound (by the store's query compiler), scoped to the
dealership the gateway resolved and authorized, and run read-only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import date, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.domain.errors import QueryNotFound
from forecourt.domain.named_queries import parse_definition
from forecourt.errors import DealershipNotFound, Forbidden, InvalidParams, UnknownAction

ADAPTER_ID = "named-queries"
Handler = Callable[[Mapping[str, Any], ExecutionContext], Awaitable[AdapterResult]]


def _plain(value: Any, kind: str, currency: str) -> Any:
    if kind == "money":
        return _money(value, currency)
    if isinstance(value, Decimal):
        # PostgreSQL sums integers into NUMERIC; counts stay integers on the wire.
        return int(value) if kind == "integer" and value == value.to_integral_value() else float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def _money(value: Any, currency: str) -> dict[str, Any] | None:
    """A money cell as ``{amount_minor, currency}`` (seed 002 §3.7): an average is rounded to a whole minor unit
    (half to even), never a float; the currency is the dealership's, the one its prices are kept in."""
    if value is None or isinstance(value, bool):
        return None
    exact = value if isinstance(value, Decimal) else Decimal(str(value))
    return {"amount_minor": int(exact.quantize(Decimal(1), rounding=ROUND_HALF_EVEN)), "currency": currency}


class NamedQueryAdapter:
    """Runs ``db.query`` and the ``admin.queries.*`` actions."""

    id = ADAPTER_ID

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {
            "db.query": self._run,
            "admin.queries.list": self._list,
            "admin.queries.upsert": self._upsert,
            "admin.queries.delete": self._delete,
        }

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the handler of ``context.action``."""
        handler = self._handlers.get(context.action.name)
        if handler is None:
            raise UnknownAction(details={"action": context.action.name})
        return await handler(payload, context)

    async def _run(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        if not ctx.dealership_id:
            raise InvalidParams("dealership_id is required.", details={"field": "dealership_id"})
        query_id = str(payload["query_id"])
        async with ctx.store.transaction() as uow:
            dealership = await uow.tenancy.get_dealership(ctx.dealership_id)
            if dealership is None:
                raise DealershipNotFound()
            # The dealership's own company owns the queries: a principal can only reach dealerships
            # of its company, so this is also the caller's company.
            query = await uow.named_queries.get(dealership.company_id, query_id)
        if query is None:
            raise QueryNotFound(details={"query_id": query_id})
        async with ctx.store.transaction() as uow:
            compiled = await uow.named_queries.run(
                query,
                dict(payload.get("params") or {}),
                dealership_id=dealership.id,
                now=ctx.now,
                timezone=dealership.timezone,
            )
        rows = compiled.rows
        truncated = len(rows) > compiled.limit
        kinds, currency = compiled.kinds, dealership.currency
        items = [{k: _plain(v, kinds.get(k, ""), currency) for k, v in r.items()} for r in rows[: compiled.limit]]
        columns = [{**c, "currency": currency} if c.get("type") == "money" else c for c in compiled.columns]
        output = {
            "query_id": query.id,
            "columns": columns,
            "rows": items,
            "row_count": len(items),
            "truncated": truncated,
            "params": compiled.params,
            "window": compiled.window,
        }
        return AdapterResult(output=output, result_type="db.rows", metadata={"rows": len(items), "query_id": query.id})

    @staticmethod
    def _company(payload: Mapping[str, Any], ctx: ExecutionContext) -> str:
        company_id = str(payload["company_id"])
        principal = ctx.principal
        if principal.method != "internal":
            member = principal.member
            if member is None or not member.is_admin or principal.company_id != company_id:
                raise Forbidden("Only the company's administrators may do this.")
        return company_id

    async def _list(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        company_id = self._company(payload, ctx)
        async with ctx.store.transaction() as uow:
            rows = await uow.named_queries.list(company_id)
        items = [
            {
                "id": r["id"],
                "description": r["description"],
                "definition": r["definition"],
                "updated_at": r["updated_at"].isoformat(),
            }
            for r in rows
        ]
        return AdapterResult(output={"items": items}, result_type="admin.result")

    async def _upsert(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        company_id = self._company(payload, ctx)
        query = parse_definition(payload["query"])
        # Compile once with the declared defaults so that a broken definition is refused at save time.
        probe = {name: spec.default for name, spec in query.params.items() if spec.default is not None}
        for name, spec in query.params.items():
            if spec.required and name not in probe:
                probe[name] = _sample(spec.type, spec.enum)
        async with ctx.store.transaction() as uow:
            uow.named_queries.check(query, probe, now=ctx.now)
            created = await uow.named_queries.upsert(company_id, query, ctx.now)
        output = {"id": query.id, "created": created, "definition": query.model_dump(mode="json", by_alias=True)}
        return AdapterResult(output=output, result_type="admin.result")

    async def _delete(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        company_id = self._company(payload, ctx)
        async with ctx.store.transaction() as uow:
            deleted = await uow.named_queries.delete(company_id, str(payload["query_id"]))
        if not deleted:
            raise QueryNotFound()
        return AdapterResult(output={"deleted": True}, result_type="admin.result")


def _sample(kind: str, enum: list[Any] | None) -> Any:
    if enum:
        return enum[0]
    return {
        "string": "x",
        "integer": 1,
        "number": 1,
        "boolean": True,
        "date": "2000-01-01",
        "datetime": "2000-01-01T00:00:00Z",
        "window": "today",
    }[kind]
