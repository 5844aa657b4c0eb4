"""The approval stage: a policy's ``require_approval`` rules hold named side-effect calls for a person.

An agent's call that matches a rule is not run: an approval record is stored and the call answers
``approval.pending`` (with the ``approval_id``). A person approves or rejects it in the console
(``approvals.decide``). The same call made again (same member, action and arguments) then runs once if it
was approved, or answers ``approval.rejected``; while undecided it keeps answering ``approval.pending``.
Operators (internal principals) and people signed in to the console are never held.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from forecourt.actions.base import Action
from forecourt.domain.approvals import Approval
from forecourt.domain.tenancy import MemberKind, Policy
from forecourt.errors import ApprovalPending, ApprovalRejected
from forecourt.gateway.base import Principal
from forecourt.gateway.redact import PII_KEYS, digest, redact_for_audit


def matching_rule(action: Action, payload: Mapping[str, Any], policies: list[Policy]) -> str | None:
    """The first ``require_approval`` rule that holds for this call, described; ``None`` when none does."""
    for policy in policies:
        for rule in policy.require_approval:
            if rule.matches(action.name, payload):
                return rule.describe()
    return None


def held(principal: Principal) -> bool:
    """Whether calls of ``principal`` can be held for approval (agents only: not operators, not people)."""
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


class ApprovalGate:
    """Checks each side-effect call against the company's approval rules and the stored approvals."""

    def __init__(self, book: ApprovalBook, clock: Callable[[], datetime]) -> None:
        self.book = book
        self.clock = clock

    async def check(
        self,
        action: Action,
        payload: Mapping[str, Any],
        principal: Principal,
        dealership_id: str | None,
        policies: list[Policy],
        surface: str,
    ) -> None:
        """Return when the call may run; raise :class:`ApprovalPending` or :class:`ApprovalRejected` otherwise."""
        if not action.side_effect or not held(principal) or principal.company_id is None:
            return
        rule = matching_rule(action, payload, policies)
        if rule is None:
            return
        args = digest(dict(payload))
        found = await self.book.find(principal.company_id, principal.member_id, action.name, args)
        now = self.clock()
        if found is not None and found.status == "approved":
            if await self.book.move(found.id, expect="approved", status="used", at=now):
                return
            found = None
        if found is not None and found.status == "rejected":
            await self.book.move(found.id, expect="rejected", status="used", at=now)
            raise ApprovalRejected(details={"approval_id": found.id})
        if found is None:
            found = Approval(
                id=uuid.uuid4().hex,
                company_id=principal.company_id,
                dealership_id=dealership_id,
                member_id=principal.member_id,
                action=action.name,
                args_digest=args,
                args_redacted=redact_for_audit(dict(payload), action.input_schema, PII_KEYS),
                rule=rule[:200],
                surface=surface,
                requested_at=now,
            )
            await self.book.add(found)
        raise ApprovalPending(details={"approval_id": found.id, "rule": found.rule})
