"""The gateway's protections of the agents behind it, as pipeline stages (docs/security.md).

``Gateway.invoke`` calls these, one line each:

- :meth:`Protections.before` (after the rate limit): a budget counts the call or refuses it (``budget.exceeded``);
  a session that has read untrusted output is refused the actions its company's policy lists in
  ``protections.after_untrusted.refuse`` (``policy.session_restricted``);
- :meth:`Protections.hold` (the approval stage, after the idempotency key is taken): the policy's
  ``require_approval`` rules, plus — in such a session — ``after_untrusted.require_approval``, hold the call for a
  person (gateway/approvals.py);
- :meth:`Protections.after`: marks a result that can carry third-party text (gateway/provenance.py), taints the
  session that received it, adds a model call's tokens and spend to the budgets;
- :meth:`Protections.audited`: the call's audit record keeps the mark's sources and flags (never the text), and
  for a model call the runtime and model that answered after any fallback (``_served_by``).

Sessions are MCP sessions (the 2025-11-25 handshake era), A2A contexts and the REST envelope's
``caller.sessionId``; their taint lives in the shared backend (Redis with several replicas).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from forecourt.contract import Action
from forecourt.domain.approvals import ApprovalRule
from forecourt.domain.tenancy import Dealership, Policy
from forecourt.errors import Overloaded
from forecourt.gateway import provenance
from forecourt.gateway.backends.protections import MemoryBudgetMeters, MemorySessionTaint, SessionTaint
from forecourt.gateway.base import Outcome, Principal
from forecourt.gateway.budgets import BudgetGuard, budget_limits, budgets_of, period_of, price_minor, usage_of
from forecourt.gateway.errors import SessionRestricted
from forecourt.gateway.policy import TenancyCache, matches_any
from forecourt.store.base import AuditRecord, Store

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from forecourt.gateway.adapter_runtime import AdapterConfigSource
    from forecourt.gateway.approvals import ApprovalGate
    from forecourt.gateway.audit_record import CallState

logger = logging.getLogger(__name__)
_NOTE = "after untrusted output in this session"


def owner_of(principal: Principal, dealership: Dealership | None) -> str | None:
    """The company whose data and policies a call concerns: the caller's, else the addressed dealership's."""
    return principal.company_id or (dealership.company_id if dealership else None)


class Protections:
    """Budgets, per-turn restrictions and provenance marks (see the module docstring)."""

    def __init__(
        self,
        tenancy: TenancyCache,
        store: Store,
        adapter_configs: AdapterConfigSource,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.tenancy = tenancy
        self.store = store
        self.adapter_configs = adapter_configs
        self.taint: SessionTaint = MemorySessionTaint()
        self.budgets = BudgetGuard(MemoryBudgetMeters(), registry)
        self._marked: Any = None
        if registry is not None:
            from prometheus_client import Counter

            self._marked = Counter(
                "forecourt_untrusted_results",
                "Results marked as carrying third-party text, by whether an injection pattern was flagged",
                ["flagged"],
                registry=registry,
            )

    def use(self, taint: SessionTaint, meters: Any) -> None:
        """Keep session taint and budget meters in the shared backend (bootstrap, with Redis)."""
        self.taint = taint
        self.budgets.meters = meters

    @staticmethod
    def _rules(policies: list[Policy]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        refuse = tuple(g for p in policies for g in p.protections.after_untrusted.refuse)
        approve = tuple(g for p in policies for g in p.protections.after_untrusted.require_approval)
        return refuse, approve

    async def _restricted(
        self, call: CallState, owner: str | None, policies: list[Policy]
    ) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """The session's (refuse, approve) globs when it is tainted and the policy restricts it; else ``None``.

        Asked once per call (the approval stage reuses the answer). While the shared backend is down this raises
        ``Overloaded`` (503): a restricted call never runs on a guess (gateway/backends/protections.py).
        """
        if "restricted" in call.extra:
            found: tuple[tuple[str, ...], tuple[str, ...]] | None = call.extra["restricted"]
            return found
        refuse, approve = self._rules(policies)
        sid = call.inv.session_id
        restricted = None
        if (refuse or approve) and owner is not None and sid and await self.taint.tainted(owner, sid):
            restricted = refuse, approve
        call.extra["restricted"] = restricted
        return restricted

    async def before(
        self, call: CallState, action: Action, principal: Principal, dealership: Dealership | None
    ) -> None:
        """Budgets, and the refusals of a restricted session (see the module docstring)."""
        owner = owner_of(principal, dealership)
        policies = await self.tenancy.policies(owner)
        if not policies:
            return
        if action.side_effect:
            restricted = await self._restricted(call, owner, policies)
            if restricted is not None and matches_any(action.name, restricted[0]):
                call.extra["denial"] = "session_restricted"
                raise SessionRestricted(details={"reason": "untrusted_output"})
        await self.budgets.admit(principal, policies)

    async def hold(
        self,
        approvals: ApprovalGate,
        action: Action,
        payload: Mapping[str, Any],
        principal: Principal,
        dealership: Dealership | None,
        call: CallState,
        idem_key: str | None,
    ) -> None:
        """The approval stage: the policy's own rules, and a restricted session's ``require_approval``."""
        owner = owner_of(principal, dealership)
        policies = await self.tenancy.policies(owner)
        restricted = await self._restricted(call, owner, policies) if action.side_effect else None
        if restricted is not None:
            rules = tuple(ApprovalRule(action=glob, note=_NOTE) for glob in restricted[1])
            if rules and owner is not None:
                policies = [*policies, Policy(id="after-untrusted", company_id=owner, require_approval=rules)]
        await approvals.check(action, payload, principal, call.dealership_id, policies, call.inv, idem_key, owner=owner)

    async def after(
        self, call: CallState, action: Action, outcome: Outcome, principal: Principal, dealership: Dealership | None
    ) -> Outcome:
        """Mark, taint and meter one successful call (see the module docstring)."""
        owner = owner_of(principal, dealership)
        found = provenance.mark(action, outcome.output)
        if found is not None:
            outcome.metadata = {**outcome.metadata, "provenance": found}
            call.extra["provenance"] = provenance.audit_note(found)
            if self._marked is not None:
                self._marked.labels("true" if found["flags"] else "false").inc()
            if owner is not None and call.inv.session_id:
                await self._taint(action, owner, call.inv.session_id)
        if action.type == "model.invoke":
            call.served_by = served_by(action, outcome.metadata)
            if not outcome.cached:
                await self._meter_model(action, outcome, principal, owner)
        return outcome

    async def _taint(self, action: Action, owner: str, session_id: str) -> None:
        """Record that the session read untrusted output; while the shared backend is down, a read whose output a
        policy's restriction depends on is withheld (503) rather than handed to a session no replica will know is
        tainted. A side effect that already ran keeps its answer (this replica still remembers the taint)."""
        try:
            await self.taint.taint(owner, session_id)
        except Overloaded:
            refuse, approve = self._rules(await self.tenancy.policies(owner))
            if (refuse or approve) and not action.side_effect:
                raise
            logger.warning("session taint not shared: %s ran while the shared backend was down", action.name)

    async def _meter_model(self, action: Action, outcome: Outcome, principal: Principal, owner: str | None) -> None:
        tokens_in, tokens_out = usage_of(outcome.metadata)
        if not (tokens_in or tokens_out):
            return
        policies = await self.tenancy.policies(owner)
        if not any(p.protections.budgets is not None for p in policies):
            return
        config = await self.adapter_configs.resolve(self.store, action.adapter, owner)
        model = str(outcome.metadata.get("model") or "")
        spend = price_minor(config.get("pricing"), model, tokens_in, tokens_out)
        await self.budgets.consumed(principal, policies, tokens_in, tokens_out, spend)

    async def usage_report(self, company_id: str, names: list[tuple[str, str]] | None = None) -> dict[str, Any]:
        """This period's meters and limits of the company's members and API keys (``admin.budgets.usage``), or of
        ``names`` only (``(scope, id)``: ``member``/member id, ``key``/key prefix; one console page)."""
        policies = await self.tenancy.policies(company_id)
        if names is None:
            async with self.store.read() as uow:
                members = await uow.tenancy.list_members(company_id)
                keys = await uow.tenancy.list_api_keys(company_id)
            names = [("member", m.id) for m in members] + [("key", k.prefix) for k in keys]
        limits = budget_limits(policies)
        rows = await self.budgets.usage(company_id, names, policies) if names else []
        for row in rows:
            row["limits"] = limits(row["scope"], row["id"])
        budgets = budgets_of(policies)
        period, resets_at = period_of(self.budgets.clock(), budgets.period if budgets is not None else "month")
        return {
            "period": period,
            "resets_at": resets_at.isoformat(),
            "currency": budgets.currency if budgets is not None else None,
            "items": rows,
        }

    @staticmethod
    def audited(call: CallState, record: AuditRecord) -> AuditRecord:
        """The call's record with its provenance note (sources and flagged patterns) and, for a model call, the
        runtime and model that answered (``_served_by``), when it has them."""
        notes: dict[str, Any] = {}
        if call.extra.get("provenance") is not None:
            notes["_provenance"] = call.extra["provenance"]
        if call.served_by is not None:
            notes["_served_by"] = call.served_by
        if not notes:
            return record
        return record.model_copy(update={"args_redacted": {**record.args_redacted, **notes}})


def served_by(action: Action, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Which runtime and model answered a model call: the route ``model.invoke`` took after its fallbacks
    (adapters/models/routing.py), else the runtime the action names and the model it reported."""
    route = metadata.get("route")
    if isinstance(route, Mapping) and isinstance(route.get("runtime"), str):
        note: dict[str, Any] = {"runtime": route["runtime"], "model": str(route.get("model") or "")[:128]}
        failed = route.get("fallback_from")
        if isinstance(failed, list) and failed:
            note["fallback_from"] = [str(f.get("runtime"))[:64] for f in failed if isinstance(f, Mapping)]
        return note
    model = metadata.get("model")
    return {"runtime": action.adapter, "model": model[:128] if isinstance(model, str) else ""}


__all__ = ["Protections", "owner_of", "served_by"]
