"""Approvals: list and decide the calls a policy's ``require_approval`` held (``gateway/approvals.py``).

``approvals.list`` and ``approvals.decide`` are for the company's administrators (the console);
``approvals.get`` lets the agent whose call was held see whether it has been decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.console_common import SHORT, console_action, is_operator, require_admin
from forecourt.domain.approvals import Approval
from forecourt.errors import Conflict, NotFound
from forecourt.store import console as queries

ADAPTER_ID = "approvals"

APPROVAL_ACTIONS: tuple[Action, ...] = (
    console_action(
        "approvals.list",
        "Calls held for approval by the company's policy, newest first.",
        {"status": {"enum": ["pending", "approved", "rejected", "used"]}},
        [],
        adapter=ADAPTER_ID,
        write=False,
    ),
    console_action(
        "approvals.decide",
        "Approve or reject a held call, with a comment. An approved call runs when the agent makes it again.",
        {
            "approval_id": SHORT,
            "decision": {"enum": ["approve", "reject"]},
            "comment": {"type": "string", "maxLength": 500},
        },
        ["approval_id", "decision"],
        adapter=ADAPTER_ID,
        write=True,
    ),
    console_action(
        "approvals.get",
        (
            "Whether a call held for approval (`approval.pending`, details.approval_id) was approved or rejected. "
            "Once approved, make the same call again and it runs. Use it after a call was answered with "
            "approval.pending."
        ),
        {"approval_id": SHORT},
        ["approval_id"],
        adapter=ADAPTER_ID,
        write=False,
        company=False,
        domain="approvals",
        scope="",
        title="Check whether a held call was approved",
        example={"approval_id": "apr_0001"},
    ),
)


def _view(approval: Approval) -> dict[str, Any]:
    return approval.model_dump(mode="json")


class ApprovalsAdapter:
    """The ``approvals`` adapter."""

    id = ADAPTER_ID

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run one approvals action."""
        name = context.action.name
        if name == "approvals.get":
            return AdapterResult(output=await self._get(payload, context))
        company_id = str(payload["company_id"])
        require_admin(context, company_id)
        if name == "approvals.list":
            items = await queries.list_approvals(context.store, [company_id], text_or_none(payload.get("status")))
            return AdapterResult(output={"items": [_view(a) for a in items]})
        return AdapterResult(output=await self._decide(payload, context, company_id))

    async def _get(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        found = await queries.get_approval(ctx.store, str(payload["approval_id"]))
        mine = found is not None and (
            is_operator(ctx)
            or (found.company_id == ctx.principal.company_id and found.member_id == ctx.principal.member_id)
        )
        if found is None or not mine:
            raise NotFound("Approval not found.")
        view = _view(found)
        return {k: view[k] for k in ("id", "action", "status", "rule", "requested_at", "decided_at", "comment")}

    async def _decide(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        found = await queries.get_approval(ctx.store, str(payload["approval_id"]))
        if found is None or found.company_id != company_id:
            raise NotFound("Approval not found.")
        status = "approved" if payload["decision"] == "approve" else "rejected"
        by = ctx.principal.member_id or ctx.principal.subject or "operator"
        moved = await queries.set_approval_status(
            ctx.store,
            found.id,
            expect="pending",
            status=status,
            at=ctx.now,
            by=by,
            comment=str(payload.get("comment", "")),
        )
        if not moved:
            raise Conflict("This approval was already decided.")
        return {"id": found.id, "status": status, "decided_by": by}


def text_or_none(value: Any) -> str | None:
    """A non-empty string, or ``None``."""
    return str(value) if isinstance(value, str) and value else None


def register_approvals(catalogue: Catalogue) -> None:
    """Add the approvals actions and their adapter."""
    for action in APPROVAL_ACTIONS:
        catalogue.add(action)
    catalogue.add_adapter(ApprovalsAdapter())
