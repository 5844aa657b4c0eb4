"""Budgets per member and per API key: calls, model tokens in and out, model spend (docs/security.md).

A company policy's ``protections.budgets`` sets the limits (a default for every member and every key, and
overrides by member id or key prefix); several policies with budgets combine to the lowest limit. Before a call the
gateway counts it (``calls``) against the member's and the key's meters of the current period and refuses it with
``budget.exceeded`` (429, with the meter, the limit and when it resets) once a meter is at its limit; after a model
call it adds the tokens the runtime reported and their price. Prices come from the runtime adapter's configuration
(``pricing``: model glob → ``input_per_million_minor`` / ``output_per_million_minor``, in minor units of the
budget's currency). Meters live in the shared backend (Redis with several replicas), one per subject and period;
a period (UTC calendar ``day`` or ``month``) starts a new meter, which is the reset.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from forecourt.domain.protections import Budget, Budgets
from forecourt.domain.tenancy import Policy
from forecourt.errors import Overloaded
from forecourt.gateway.backends.protections import BudgetMeters
from forecourt.gateway.base import Principal
from forecourt.gateway.errors import BudgetExceeded

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

METERS = ("calls", "tokens_in", "tokens_out", "spend_minor")


def period_of(now: datetime, period: str) -> tuple[str, datetime]:
    """The period's id and when the next one starts (UTC)."""
    now = now.astimezone(UTC)
    if period == "day":
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        return start.strftime("%Y-%m-%d"), start + timedelta(days=1)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (start + timedelta(days=32)).replace(day=1)
    return start.strftime("%Y-%m"), following


def _lowest(a: Budget | None, b: Budget | None) -> Budget | None:
    if a is None or b is None:
        return a or b
    merged = {
        m: min(v for v in (a.limits().get(m), b.limits().get(m)) if v is not None) for m in {*a.limits(), *b.limits()}
    }
    return Budget(**merged)


@dataclass(frozen=True)
class Subject:
    """One metered identity: ``scope`` ``member`` or ``key``, its meter name and its limits."""

    scope: str
    name: str
    limits: dict[str, int]


def budgets_of(policies: list[Policy]) -> Budgets | None:
    """The first policy's budgets that sets any (its period and currency), for :func:`subjects`."""
    return next((p.protections.budgets for p in policies if p.protections.budgets is not None), None)


def subjects(principal: Principal, policies: list[Policy]) -> list[Subject]:
    """The member's and the key's metered subjects under ``policies`` (none for anonymous and operator calls)."""
    company, member = principal.company_id, principal.member_id
    if company is None or member is None or principal.method == "internal":
        return []
    found: list[Subject] = []
    member_budget: Budget | None = None
    key_budget: Budget | None = None
    for policy in policies:
        b = policy.protections.budgets
        if b is None:
            continue
        member_budget = _lowest(member_budget, b.members.get(member, b.member))
        if principal.key_prefix:
            key_budget = _lowest(key_budget, b.keys.get(principal.key_prefix, b.key))
    if member_budget is not None and member_budget.limits():
        found.append(Subject("member", f"{company}/m/{member}", member_budget.limits()))
    if key_budget is not None and key_budget.limits() and principal.key_prefix:
        found.append(Subject("key", f"{company}/k/{principal.key_prefix}", key_budget.limits()))
    return found


def budget_limits(policies: list[Policy]) -> Callable[[str, str], dict[str, int]]:
    """The limits of a ``member`` or ``key`` (by member id or key prefix) under ``policies``."""

    def limits(scope: str, ident: str) -> dict[str, int]:
        found: Budget | None = None
        for policy in policies:
            b = policy.protections.budgets
            if b is not None:
                own = b.members.get(ident, b.member) if scope == "member" else b.keys.get(ident, b.key)
                found = _lowest(found, own)
        return found.limits() if found is not None else {}

    return limits


def price_minor(pricing: Any, model: str, tokens_in: int, tokens_out: int) -> int:
    """What a model call cost, in minor units, under an adapter's ``pricing`` (0 when the model has no price)."""
    if not isinstance(pricing, Mapping):
        return 0
    for pattern, price in pricing.items():
        if isinstance(price, Mapping) and (pattern in ("*", model) or fnmatchcase(model, str(pattern))):
            per_in = float(price.get("input_per_million_minor") or 0)
            per_out = float(price.get("output_per_million_minor") or 0)
            return math.ceil((tokens_in * per_in + tokens_out * per_out) / 1_000_000)
    return 0


def usage_of(metadata: Mapping[str, Any]) -> tuple[int, int]:
    """Tokens in and out a model runtime reported in a result's metadata (``usage``)."""
    usage = metadata.get("usage")
    if not isinstance(usage, Mapping):
        return 0, 0

    def count(name: str) -> int:
        value = usage.get(name)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    return count("input_tokens"), count("output_tokens")


class BudgetGuard:
    """Counts and refuses calls against budgets; adds model usage after a call."""

    def __init__(
        self,
        meters: BudgetMeters,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.meters = meters
        self.clock = clock
        self._exceeded: Any = None
        self._used: Any = None
        if registry is not None:
            from prometheus_client import Counter

            self._exceeded = Counter(
                "forecourt_budget_exceeded", "Calls refused for a spent budget", ["meter", "scope"], registry=registry
            )
            self._used = Counter("forecourt_budget_used", "Budget consumed, by meter", ["meter"], registry=registry)

    def _key(self, subject: Subject, policies: list[Policy]) -> tuple[str, datetime, str]:
        budgets = budgets_of(policies)
        period = budgets.period if budgets is not None else "month"
        pid, ends = period_of(self.clock(), period)
        return f"{pid}:{subject.name}", ends, pid

    async def admit(self, principal: Principal, policies: list[Policy]) -> None:
        """Count one call; raise :class:`BudgetExceeded` when a meter of the member or key is spent."""
        for subject in subjects(principal, policies):
            key, ends, pid = self._key(subject, policies)
            counts = await self.meters.add(key, {"calls": 1}, ends.timestamp())
            for meter, limit in subject.limits.items():
                used = counts.get(meter, 0)
                if used > limit or (meter != "calls" and used >= limit):
                    await self.meters.add(key, {"calls": -1}, ends.timestamp())  # a refused call is not a call
                    if self._exceeded is not None:
                        self._exceeded.labels(meter, subject.scope).inc()
                    retry = max(0, int((ends - self.clock()).total_seconds()))
                    raise BudgetExceeded(
                        details={
                            "meter": meter,
                            "scope": subject.scope,
                            "limit": limit,
                            "period": pid,
                            "resets_at": ends.isoformat(),
                            "retry_after": retry,
                        }
                    )
            if self._used is not None:
                self._used.labels("calls").inc()

    async def consumed(
        self, principal: Principal, policies: list[Policy], tokens_in: int, tokens_out: int, spend: int
    ) -> None:
        """Add a model call's tokens and spend to the member's and the key's meters."""
        amounts = {k: v for k, v in (("tokens_in", tokens_in), ("tokens_out", tokens_out), ("spend_minor", spend)) if v}
        if not amounts:
            return
        for subject in subjects(principal, policies):
            key, ends, _ = self._key(subject, policies)
            # The call has run: a meter that cannot be written now (its backend is down and fails closed) must not
            # turn the caller's answer into an error; the backend logged the outage.
            with contextlib.suppress(Overloaded):
                await self.meters.add(key, amounts, ends.timestamp())
        if self._used is not None:
            for meter, amount in amounts.items():
                self._used.labels(meter).inc(amount)

    async def usage(
        self, company_id: str, names: list[tuple[str, str]], policies: list[Policy]
    ) -> list[dict[str, Any]]:
        """This period's meters of ``names`` (``(scope, id)``: ``member``/member id, ``key``/key prefix)."""
        budgets = budgets_of(policies)
        period = budgets.period if budgets is not None else "month"
        pid, ends = period_of(self.clock(), period)
        keys = [f"{pid}:{company_id}/{'m' if scope == 'member' else 'k'}/{ident}" for scope, ident in names]
        counts = await self.meters.read(keys)
        return [
            {"scope": scope, "id": ident, "period": pid, "resets_at": ends.isoformat(), "used": used}
            for (scope, ident), used in zip(names, counts, strict=True)
        ]


__all__ = ["METERS", "BudgetGuard", "Subject", "budget_limits", "period_of", "price_minor", "subjects", "usage_of"]
