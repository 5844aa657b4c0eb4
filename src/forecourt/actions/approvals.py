"""Approvals: list and decide the calls a policy's ``require_approval`` held (``gateway/approvals.py``).

``approvals.list`` and ``approvals.decide`` are for the company's administrators (the console); an approved
call runs at once as the agent that made it (``gateway/held_calls.py``). ``approvals.get`` lets that agent see
whether its call was decided and, once it ran, read its answer.

Who decides: an administrator of the call's company with authority over the call's rooftop (an admin key bound
to some rooftops neither lists nor decides calls held at the others), or the operator — and never the caller
that made the call (``approval.self_decision``), whatever door either came through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.console_common import SHORT, console_action, is_operator, require_admin
from forecourt.domain.approvals import Approval
from forecourt.errors import Conflict, NotFound, SelfDecision
from forecourt.store import console as queries

ADAPTER_ID = "approvals"

RunHeld = Callable[[str, str | None], Awaitable[dict[str, Any]]]
"""Runs an approved held call as its caller and says how it ended (``HeldCalls.run``)."""

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
        "Approve or reject a held call, with a comment. An approved call runs at once, as the agent that made it; "
        "the answer says how it ended (`ran`, `outcome`).",
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
            "Whether a call of yours held for a person's approval was decided and, once it ran, its answer. "
            "Use it after a call was answered with approval.pending (details.approval_id). `status` is pending, "
            "approved, rejected or used (it ran); once it ran, `result` holds the call's `output` or its `error`. "
            "An approved call runs by itself: do not send it again."
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


class ApprovalsAdapter:
    """The ``approvals`` adapter."""

    id = ADAPTER_ID

    def __init__(self, run_held: RunHeld | None = None) -> None:
        self.run_held = run_held

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run one approvals action."""
        name = context.action.name
        if name == "approvals.get":
            return AdapterResult(output=await self._get(payload, context))
        company_id = str(payload["company_id"])
        require_admin(context, company_id)
        if name == "approvals.list":
            items = await queries.list_approvals(context.store, [company_id], text_or_none(payload.get("status")))
            return AdapterResult(output={"items": [a.admin_view() for a in items if over_rooftop(context, a)]})
        return AdapterResult(output=await self._decide(payload, context, company_id))

    async def _get(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        found = await queries.get_approval(ctx.store, str(payload["approval_id"]))
        mine = found is not None and (
            is_operator(ctx)
            or (found.company_id == ctx.principal.company_id and found.member_id == ctx.principal.member_id)
        )
        if found is None or not mine:
            raise NotFound("Approval not found.")
        view = found.model_dump(mode="json")
        keys = ("id", "action", "status", "rule", "requested_at", "decided_at", "comment", "ran_at", "result")
        return {k: view[k] for k in keys}

    async def _decide(self, payload: Mapping[str, Any], ctx: ExecutionContext, company_id: str) -> Any:
        found = await queries.get_approval(ctx.store, str(payload["approval_id"]))
        if found is None or found.company_id != company_id or not over_rooftop(ctx, found):
            raise NotFound("Approval not found.")
        if made_it(ctx, found):
            raise SelfDecision()
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
        answer: dict[str, Any] = {"id": found.id, "status": status, "decided_by": by}
        if status == "approved" and self.run_held is not None:
            ran = await self.run_held(found.id, ctx.trace_id)
            answer.update(ran)
            if ran.get("ran"):
                answer["status"] = "used"
        return answer


def over_rooftop(ctx: ExecutionContext, approval: Approval) -> bool:
    """Whether the caller has authority over the rooftop the held call addressed (the operator over every one)."""
    if is_operator(ctx) or approval.dealership_id is None:
        return True
    return approval.dealership_id in ctx.principal.dealership_ids


def made_it(ctx: ExecutionContext, approval: Approval) -> bool:
    """Whether the caller is the one that made the held call."""
    principal = ctx.principal
    if is_operator(ctx) or approval.member_id is None:
        return False
    return principal.company_id == approval.company_id and principal.member_id == approval.member_id


def text_or_none(value: Any) -> str | None:
    """A non-empty string, or ``None``."""
    return str(value) if isinstance(value, str) and value else None


def register_approvals(catalogue: Catalogue, run_held: RunHeld | None = None) -> None:
    """Add the approvals actions and their adapter (``run_held`` runs a call once it is approved)."""
    for action in APPROVAL_ACTIONS:
        catalogue.add(action)
    catalogue.add_adapter(ApprovalsAdapter(run_held))
