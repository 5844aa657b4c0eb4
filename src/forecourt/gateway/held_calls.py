"""Held calls run on approval: once a person approves a call a policy held, it runs as the agent that made it.

The approval record kept the call's input, the dealership it addressed, its idempotency key and the authority of
its caller (``gateway/approvals.py``). :meth:`HeldCalls.run` checks that this authority still stands — the
member exists and is active, the API key it used is neither revoked nor expired — and narrows it to what the
member holds now (a member who lost a scope or a rooftop since does not keep it for the held call), then sends
the call through the gateway like any other: policy, limits, audit (under the door it came from) and the
approval stage, which lets exactly this approved call through once. The answer, or the error, is kept on the
record for the agent (``approvals.get``); the held input is erased.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, cast

from forecourt.domain.approvals import Approval
from forecourt.errors import Expired, ForecourtError, InternalError, Unauthorized
from forecourt.gateway.approvals import RanListener, running
from forecourt.gateway.auth.common import require_usable_member
from forecourt.gateway.base import AuthMethod, Invocation, Outcome, Principal, Surface
from forecourt.store.base import Store

logger = logging.getLogger(__name__)

Invoke = Callable[[Invocation], Awaitable[Outcome]]


class HeldBook(Protocol):
    """Where approval records are read and finished (``forecourt.store.console.SqlApprovals``)."""

    async def get(self, approval_id: str) -> Approval | None:
        """One record."""
        ...

    async def finish(self, approval_id: str, result: dict[str, Any], at: datetime) -> None:
        """Keep the held call's answer, mark the record used and erase the held input."""
        ...


class HeldCalls:
    """Runs approved calls as their callers (bootstrap wires it to ``approvals.decide``)."""

    def __init__(
        self,
        store: Store,
        book: HeldBook,
        invoke: Invoke,
        clock: Callable[[], datetime],
        listeners: Sequence[RanListener] = (),
    ) -> None:
        self.store = store
        self.book = book
        self.invoke = invoke
        self.clock = clock
        self.listeners = listeners

    async def run(self, approval_id: str, trace_id: str | None = None) -> dict[str, Any]:
        """Run the approved call ``approval_id``; its outcome as the approver sees it (``ok`` or an error code).

        The run is shielded: should the approver's own call end first (its timeout, a client gone), the held call
        still runs to its end and its answer is still kept.
        """
        return await asyncio.shield(self._run(approval_id, trace_id))

    async def _run(self, approval_id: str, trace_id: str | None) -> dict[str, Any]:
        approval = await self.book.get(approval_id)
        if approval is None or approval.status != "approved" or not approval.held:
            return {"ran": False}
        held = approval.held
        try:
            principal = await self._principal(approval, held.get("authority") or {})
            with running(approval.id):
                outcome = await self.invoke(
                    Invocation(
                        action=approval.action,
                        payload=dict(held.get("payload") or {}),
                        surface=cast(Surface, approval.surface or "internal"),
                        principal=principal,
                        dealership_id=held.get("dealership_id"),
                        idempotency_key=held.get("idempotency_key"),
                        trace_id=trace_id or uuid.uuid4().hex,
                    )
                )
            result: dict[str, Any] = {"result_type": outcome.result_type, "output": outcome.output}
        except ForecourtError as exc:
            result = {"error": exc.to_dict()}
        except Exception:  # the approver's call must still answer; the record says the run failed
            logger.exception("a held call failed to run on approval (approval %s)", approval.id)
            result = {"error": InternalError().to_dict()}
        await self.book.finish(approval.id, result, self.clock())
        for listener in self.listeners:
            try:
                await listener(approval, result)
            except Exception:  # the call ran and its answer is kept; a listener's failure must not hide that
                logger.exception("a listener failed after a held call ran (approval %s)", approval.id)
        error = result.get("error")
        return {"ran": True, "outcome": error["code"] if error else "ok"}

    async def _principal(self, approval: Approval, authority: dict[str, Any]) -> Principal:
        """The caller who made the held call, with no more authority than it had then and has now."""
        method = cast(AuthMethod, authority.get("method") or "api_key")
        if method == "anonymous":  # runs as the anonymous caller it was: the rooftop's public agent is checked again
            return Principal(method="anonymous", company_id=None, member_id=None)
        async with self.store.read() as uow:
            member = (
                await uow.tenancy.get_member(approval.company_id, approval.member_id) if approval.member_id else None
            )
            prefix = authority.get("key_prefix")
            key = await uow.tenancy.get_api_key(prefix) if isinstance(prefix, str) and prefix else None
        usable = require_usable_member(member, method)
        if prefix:
            if key is None or key.revoked_at is not None or key.member_id != usable.id:
                raise Unauthorized("The API key that made this call is no longer valid.")
            if key.expires_at is not None and key.expires_at <= self.clock():
                raise Expired("The API key that made this call has expired.")
        if authority.get("toolset"):
            usable = usable.model_copy(update={"toolset": authority["toolset"]})
        return Principal(
            method=method,
            company_id=approval.company_id,
            member_id=usable.id,
            profile_id=usable.profile_id,
            member=usable,
            scopes=frozenset(authority.get("scopes") or ()) & frozenset(usable.scopes),
            dealership_ids=frozenset(authority.get("dealership_ids") or ()) & frozenset(usable.dealership_ids),
            key_prefix=prefix if isinstance(prefix, str) else None,
            subject=authority.get("subject"),
        )
