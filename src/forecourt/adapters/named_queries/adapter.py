"""The ``named-queries`` adapter: ``db.query`` (run a named query) and ``admin.queries.*`` (define them).

``db.query`` takes ``{query_id, params, dealership_id?}``; callers never send SQL. The query is looked
up in the caller's company, compiled with the parameters bound (see :mod:`.compiler`), scoped to the
dealership the gateway resolved and authorized, and run read-only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from forecourt.actions.base import Action, AdapterResult, ExecutionContext
from forecourt.adapters.knowledge.service import connection_of
from forecourt.adapters.named_queries.compiler import compile_query
from forecourt.adapters.named_queries.definition import (
    QueryNotFound,
    parse_definition,
)
from forecourt.adapters.named_queries.repository import NamedQueryRepository
from forecourt.errors import DealershipNotFound, Forbidden, InvalidParams, UnknownAction

ADAPTER_ID = "named-queries"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
_COMPANY: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 128}
_QUERY_ID: dict[str, Any] = {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.-]{0,63}$"}

DB_QUERY_INPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "query_id": {**_QUERY_ID, "description": "Id of a named query your company's admin defined."},
        "params": {
            "type": "object",
            "maxProperties": 20,
            "additionalProperties": {
                "type": ["string", "integer", "number", "boolean", "array", "null"],
                "maxLength": 200,
                "maxItems": 100,
            },
            "description": "Values of the query's declared parameters (they are bound, never spliced into SQL).",
        },
        "dealership_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "The dealership to report on; optional when the credential is bound to exactly one.",
        },
    },
    "required": ["query_id"],
    "additionalProperties": False,
}
DB_QUERY_OUTPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "query_id": {"type": "string"},
        "columns": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "type": {"type": "string"}},
                "required": ["name", "type"],
            },
        },
        "rows": {"type": "array", "items": {"type": "object"}},
        "row_count": {"type": "integer", "minimum": 0},
        "truncated": {"type": "boolean"},
        "params": {"type": "object"},
        "window": {"type": ["object", "null"]},
    },
    "required": ["query_id", "columns", "rows", "row_count", "truncated", "params", "window"],
}


def _admin(name: str, description: str, props: dict[str, Any], required: list[str], *, write: bool) -> Action:
    return Action(
        name=name,
        type="tool.run",
        title=name,
        description=description,
        input_schema={
            "type": "object",
            "properties": {"company_id": _COMPANY, **props},
            "required": ["company_id", *required],
            "additionalProperties": False,
        },
        output_schema=None,
        adapter=ADAPTER_ID,
        scope="amcp:admin:write" if write else "amcp:admin:read",
        side_effect=write,
        dealer_scoped=False,
        domain="admin",
        tags=("admin", "reports"),
    )


NAMED_QUERY_ACTIONS: tuple[Action, ...] = (
    Action(
        name="db.query",
        type="db.query",
        title="Run a named report",
        description=(
            "Run one of your company's named, read-only report queries (e.g. leads_by_source_this_week, "
            "aged_inventory, service_lane_load) for a dealership, with typed parameters. Returns columns "
            "and rows; rows never include customer contact details. Ask an admin to define new queries."
        ),
        input_schema=DB_QUERY_INPUT,
        output_schema=DB_QUERY_OUTPUT,
        adapter=ADAPTER_ID,
        scope="amcp:reports:read",
        pii=False,
        timeout_s=15.0,
        domain="reports",
        result_type="db.rows",
        tags=("reports",),
    ),
    _admin("admin.queries.list", "List the company's named queries.", {}, [], write=False),
    _admin(
        "admin.queries.upsert",
        "Define or replace a named query (validated and compiled before it is saved).",
        {"query": {"type": "object"}},
        ["query"],
        write=True,
    ),
    _admin("admin.queries.delete", "Delete a named query.", {"query_id": _QUERY_ID}, ["query_id"], write=True),
)

Handler = Callable[[Mapping[str, Any], ExecutionContext], Awaitable[AdapterResult]]


def _plain(value: Any, kind: str) -> Any:
    if isinstance(value, Decimal):
        # PostgreSQL sums integers into NUMERIC; money and counts stay integers on the wire.
        return int(value) if kind in ("integer", "money") and value == value.to_integral_value() else float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


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
            query = await NamedQueryRepository(connection_of(uow)).get(dealership.company_id, query_id)
        if query is None:
            raise QueryNotFound(details={"query_id": query_id})
        async with ctx.store.transaction() as uow:
            conn = connection_of(uow)
            compiled = compile_query(
                query,
                dict(payload.get("params") or {}),
                dealership_id=dealership.id,
                now=ctx.now,
                timezone=dealership.timezone,
                postgres=conn.dialect.name == "postgresql",
            )
            rows = (await conn.execute(compiled.statement)).all()
        truncated = len(rows) > compiled.limit
        items = [
            {k: _plain(v, compiled.kinds.get(k, "")) for k, v in r._mapping.items()} for r in rows[: compiled.limit]
        ]
        output = {
            "query_id": query.id,
            "columns": compiled.columns,
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
            rows = await NamedQueryRepository(connection_of(uow)).list(company_id)
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
        compile_query(query, probe, dealership_id="-", now=ctx.now, timezone="UTC", postgres=False)
        async with ctx.store.transaction() as uow:
            created = await NamedQueryRepository(connection_of(uow)).upsert(company_id, query, ctx.now)
        output = {"id": query.id, "created": created, "definition": query.model_dump(mode="json", by_alias=True)}
        return AdapterResult(output=output, result_type="admin.result")

    async def _delete(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        company_id = self._company(payload, ctx)
        async with ctx.store.transaction() as uow:
            deleted = await NamedQueryRepository(connection_of(uow)).delete(company_id, str(payload["query_id"]))
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
