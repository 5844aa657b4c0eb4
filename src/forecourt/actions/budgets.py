"""``admin.budgets.usage``: this period's budget meters of a company's members and API keys (docs/security.md).

The meters live in the gateway's shared backend, not the database: the ``budgets`` adapter is handed the
gateway's reader (``Protections.usage_report``) when bootstrap wires it. The console's budgets view and the admin
API read it through this action.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.common import admin_action
from forecourt.actions.console_common import require_admin

ADAPTER_ID = "budgets"
UsageReport = Callable[[str], Awaitable[dict[str, Any]]]
"""``company_id`` → ``{"period", "resets_at", "items": [{scope, id, limits, used}]}``."""

USAGE = admin_action(
    "admin.budgets.usage",
    "This period's budget use of the company's members and API keys (calls, model tokens, model spend) and limits.",
    {},
    [],
    write=False,
    adapter=ADAPTER_ID,
    tags=("budgets",),
)


class BudgetsAdapter:
    """The ``budgets`` adapter."""

    id = ADAPTER_ID

    def __init__(self, report: UsageReport) -> None:
        self.report = report

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run ``admin.budgets.usage``."""
        company_id = str(payload["company_id"])
        require_admin(context, company_id)
        return AdapterResult(output=await self.report(company_id), result_type="admin.result")


def register_budgets(catalogue: Catalogue, report: UsageReport) -> None:
    """Add ``admin.budgets.usage`` and its adapter."""
    actions: tuple[Action, ...] = (USAGE,)
    for action in actions:
        if catalogue.get(action.name) is None:
            catalogue.add(action)
    catalogue.add_adapter(BudgetsAdapter(report))


__all__ = ["ADAPTER_ID", "USAGE", "BudgetsAdapter", "register_budgets"]
