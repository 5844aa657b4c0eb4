"""The operator's data upkeep as gateway actions: audit retention and the demo data.

``forecourt audit purge`` runs ``admin.audit.purge`` and ``forecourt demo`` runs ``admin.demo.load`` (then
``admin.keys.create`` for the console key it prints) through ``Gateway.invoke`` as the operator, so each is checked
and audited like any other call: the record names the operator, the surface ``cli`` and the company it concerned
(the platform for the demo, which loads two companies). Only the operator may run them.

The retention rule lives here, once (:func:`purge_company`, :func:`purge_all`). The demo generators sit
above the actions (they load tenants with :mod:`forecourt.actions.tenants_apply`), so bootstrap hands the adapter
the loader (:class:`DemoLoader`); a process built without one refuses ``admin.demo.load``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from forecourt.actions.admin_operator import operator_action
from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.errors import CompanyNotFound, Forbidden, InvalidParams
from forecourt.store.base import Store

ADAPTER_ID = "operator_data"
DEFAULT_RETENTION_DAYS = 365
"""A company without policies keeps its audit records a year."""
_ID = {"type": "string", "minLength": 1, "maxLength": 128}

DemoLoader = Callable[[Store, Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""``await load(store, options)``: the demo tenants (or with ``bulk`` a benchmark-sized inventory); a summary."""
TenancyChanged = Callable[[tuple[str, ...]], Awaitable[None]]


def _action(name: str, description: str, props: dict[str, Any], required: list[str], timeout_s: float) -> Action:
    return operator_action(name, description, props, required, write=True, timeout_s=timeout_s, adapter=ADAPTER_ID)


DATA_ACTIONS: list[Action] = [
    _action(
        "admin.audit.purge",
        "Delete the company's audit records older than the shortest audit_retention_days of its policies "
        f"({DEFAULT_RETENTION_DAYS} days without policies); answers how many were deleted.",
        {"company_id": _ID},
        ["company_id"],
        timeout_s=600.0,
    ),
    _action(
        "admin.demo.load",
        "Load the demo tenants with their inventory, customers, leads and service data (idempotent), or with "
        "bulk a benchmark-sized inventory (rooftops bench-0001...).",
        {
            "vehicles": {"type": "integer", "minimum": 0, "maximum": 1_000_000},
            "seed": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
            "bulk": {"type": "boolean"},
            "dealerships": {"type": "integer", "minimum": 1, "maximum": 100_000},
        },
        [],
        timeout_s=3600.0,
    ),
]


async def purge_company(store: Store, company_id: str, *, now: datetime | None = None) -> int:
    """Delete the company's audit records past the shortest retention among its policies; answers how many."""
    async with store.transaction() as uow:
        policies = await uow.tenancy.list_policies(company_id)
        days = min((p.audit_retention_days for p in policies), default=DEFAULT_RETENTION_DAYS)
        cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
        return await uow.audit.purge_before(company_id, cutoff)


async def purge_all(store: Store, *, now: datetime | None = None) -> int:
    """Apply every company's retention policy."""
    async with store.transaction() as uow:
        companies = await uow.tenancy.list_companies()
    total = 0
    for company in companies:
        total += await purge_company(store, company.id, now=now)
    return total


class OperatorDataAdapter:
    """Runs the operator's data upkeep actions (operator only)."""

    id = ADAPTER_ID

    def __init__(self, demo_loader: DemoLoader | None = None, on_change: TenancyChanged | None = None) -> None:
        self.demo_loader = demo_loader
        self.on_change = on_change

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the action when the caller is the operator."""
        if not context.principal.is_operator:
            raise Forbidden("Only the operator may do this.")
        if context.action.name == "admin.audit.purge":
            output = await self._purge(str(payload["company_id"]), context)
        else:
            output = await self._demo(payload, context)
        return AdapterResult(output=output, result_type="admin.result")

    async def _purge(self, company_id: str, ctx: ExecutionContext) -> dict[str, Any]:
        async with ctx.store.read() as uow:
            if await uow.tenancy.get_company(company_id) is None:
                raise CompanyNotFound(f"company {company_id} does not exist", details={"company_id": company_id})
        return {"company_id": company_id, "purged": await purge_company(ctx.store, company_id, now=ctx.now)}

    async def _demo(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
        if self.demo_loader is None:
            raise InvalidParams("This process cannot load the demo data.")
        output = await self.demo_loader(ctx.store, dict(payload))
        if self.on_change is not None:
            await self.on_change(("*",))  # tenants (re)written: members, keys and policies of the demo companies
        return output


def register_data_actions(
    catalogue: Catalogue, demo_loader: DemoLoader | None, on_change: TenancyChanged | None
) -> None:
    """Add the data upkeep actions and their adapter to ``catalogue``."""
    for action in DATA_ACTIONS:
        catalogue.add(action)
    catalogue.add_adapter(OperatorDataAdapter(demo_loader, on_change))
