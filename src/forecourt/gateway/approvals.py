"""The approval stage: a policy's ``require_approval`` rules hold named side-effect calls for a person.

An agent's call that matches a rule is not run: an approval record keeps the call (its input, where it was
addressed and the caller's authority) and the call answers ``approval.pending`` with the ``approval_id``. A
person approves or rejects it in the console (``approvals.decide``). An approved call then runs at once, as the
agent that made it (``gateway/held_calls.py``), and its answer is kept for the agent to read with
``approvals.get`` — the agent does not send it again. The same call made again while it waits answers the same
``approval.pending``; after a rejection it answers ``approval.rejected`` once. Operators (internal principals) and
people signed in to the console are never held. Anonymous callers (a shopper on a public dealer agent) are held
like agents, under the company whose rooftop they called: a rule names an action, not a kind of caller, so
dropping the key never skips it. An anonymous caller cannot read the record (``approvals.get`` needs a member);
the approved call runs as the anonymous caller, with the same checks as when it was made.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Protocol

from forecourt.contract import Action
from forecourt.domain.approvals import Approval
from forecourt.domain.tenancy import MemberKind, Policy
from forecourt.errors import ApprovalPending, ApprovalRejected
from forecourt.gateway.base import Invocation, Principal
from forecourt.gateway.redact import PII_KEYS, digest, redact_for_audit
from forecourt.scoped import scoped

_RUNNING: ContextVar[str | None] = ContextVar("forecourt_running_approval", default=None)


def running(approval_id: str) -> AbstractContextManager[None]:
    """Within this block the approved call ``approval_id`` passes the gate (the only way an approved call runs)."""
    return scoped(_RUNNING, approval_id)


def authority(principal: Principal) -> dict[str, Any]:
    """What an approved call needs to run later as the caller who made it (never more than the caller had)."""
    return {
        "method": principal.method,
        "member_id": principal.member_id,
        "profile_id": principal.profile_id,
        "scopes": sorted(principal.scopes),
        "dealership_ids": sorted(principal.dealership_ids),
        "key_prefix": principal.key_prefix,
        "subject": principal.subject,
        "toolset": principal.member.toolset if principal.member is not None else None,
    }


def matching_rule(action: Action, payload: Mapping[str, Any], policies: list[Policy]) -> str | None:
    """The first ``require_approval`` rule that holds for this call, described; ``None`` when none does."""
    for policy in policies:
        for rule in policy.require_approval:
            if rule.matches(action.name, payload):
                return rule.describe()
    return None


def held(principal: Principal) -> bool:
    """Whether calls of ``principal`` can be held for approval (agents and anonymous callers: not operators, not
    people)."""
    if principal.anonymous:
        return True
    member = principal.member
    return principal.method != "internal" and member is not None and member.kind == MemberKind.AGENT


class ApprovalBook(Protocol):
    """Where approval records are kept (``forecourt.store.console.SqlApprovals``; bootstrap wires it)."""

    async def find(self, company_id: str, member_id: str | None, action: str, args_digest: str) -> Approval | None:
        """The newest unused record of this exact call."""
        ...

    async def add(self, approval: Approval) -> None:
        """Store a new pending record."""
        ...

    async def move(self, approval_id: str, *, expect: str, status: str, at: datetime) -> bool:
        """Move a record from ``expect`` to ``status``; False when another caller moved it first."""
        ...


RanListener = Callable[[Approval, dict[str, Any]], Awaitable[None]]
"""``listener(approval, result)`` once a held call ran on approval (``result``: ``{result_type, output}`` or
``{error}``)."""


class ApprovalGate:
    """Checks each side-effect call against the company's approval rules and the stored approvals."""

    def __init__(self, book: ApprovalBook, clock: Callable[[], datetime]) -> None:
        self.book = book
        self.clock = clock
        self.on_ran: list[RanListener] = []
        """Told when a held call ran on approval (the A2A gateway agent then ends the task that waited)."""

    async def check(
        self,
        action: Action,
        payload: Mapping[str, Any],
        principal: Principal,
        dealership_id: str | None,
        policies: list[Policy],
        inv: Invocation,
        idempotency_key: str | None = None,
        owner: str | None = None,
    ) -> None:
        """Return when the call may run; raise :class:`ApprovalPending` or :class:`ApprovalRejected` otherwise.

        ``owner``: the company whose data the call addresses (the rooftop's, for an anonymous caller).
        """
        company_id = principal.company_id or owner
        if not action.side_effect or not held(principal) or company_id is None:
            return
        rule = matching_rule(action, payload, policies)
        if rule is None:
            return
        args = digest(dict(payload))
        found = await self.book.find(company_id, principal.member_id, action.name, args)
        now = self.clock()
        if found is not None and found.status == "approved":
            if _RUNNING.get() == found.id and await self.book.move(found.id, expect="approved", status="used", at=now):
                return
            raise ApprovalPending(details={"approval_id": found.id, "rule": found.rule})
        if found is not None and found.status == "rejected":
            await self.book.move(found.id, expect="rejected", status="used", at=now)
            raise ApprovalRejected(details={"approval_id": found.id})
        if found is None:
            found = Approval(
                id=uuid.uuid4().hex,
                company_id=company_id,
                dealership_id=dealership_id,
                member_id=principal.member_id,
                action=action.name,
                args_digest=args,
                args_redacted=redact_for_audit(dict(payload), action.input_schema, PII_KEYS),
                rule=rule[:200],
                surface=inv.surface,
                requested_at=now,
                held={
                    "payload": dict(payload),
                    "dealership_id": dealership_id,
                    "idempotency_key": idempotency_key,
                    "request_id": inv.request_id,
                    "authority": authority(principal),
                },
            )
            await self.book.add(found)
        raise ApprovalPending(details={"approval_id": found.id, "rule": found.rule})
