"""Authorization (seed 001 §6): the dealer agent's security scheme, the member's grants, company policy, tenancy.

The same :func:`decide` answers "may this caller run this action here?" for a call and for listings
(MCP ``tools/list``), so what a client is shown is exactly what it may call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from forecourt import caching
from forecourt.contract import Action
from forecourt.contract.overlay import overlaid
from forecourt.domain.tenancy import Dealership, Policy
from forecourt.errors import (
    Forbidden,
    ForecourtError,
    InsufficientScope,
    PolicyDenied,
    SideEffectsNotAllowed,
    TenancyDenied,
    Unauthorized,
    UnknownAction,
)
from forecourt.gateway.backends.authority import AuthorityGenerations, Generation, MemoryAuthorityGenerations
from forecourt.gateway.base import Principal
from forecourt.store.base import Store


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """Whether ``name`` matches one of the glob ``patterns`` (``*`` matches everything)."""
    return any(p in ("*", name) or fnmatchcase(name, p) for p in patterns)


def scope_grants(scopes: frozenset[str], required: str, *, side_effect: bool) -> bool:
    """Whether ``scopes`` allow an action needing ``required``.

    ``amcp:<domain>:write`` implies ``:read`` of the same domain; a ``:read`` scope never permits a
    side-effect action; ``amcp:*:<level>`` covers every domain.
    """
    if not required:
        return True
    parts = required.split(":")
    if len(parts) != 3:
        return required in scopes
    prefix, domain, _ = parts
    wanted = ("write",) if side_effect else ("read", "write")
    return any(f"{prefix}:{d}:{lvl}" in scopes for d in (domain, "*") for lvl in wanted)


@dataclass(frozen=True)
class Decision:
    """Why a call may or may not proceed."""

    allowed: bool
    reason: str = "ok"
    error: ForecourtError | None = None


_ALLOW = Decision(True)


def _deny(error: ForecourtError, reason: str) -> Decision:
    return Decision(False, reason, error)


ADMIN_SCOPES = frozenset({"amcp:admin:read", "amcp:admin:write"})


def effective_scopes(principal: Principal) -> frozenset[str]:
    """The scopes a call is checked against.

    An admin member's (``is_admin``) full credential also carries ``amcp:admin:read|write``: being an
    administrator is a membership fact, not a scope someone must remember to grant. A credential narrowed
    below the member's own scopes (an API key or token asking for fewer) does not, so a narrowed key
    handed to a tool can never administer the company.
    """
    member = principal.member
    if member is not None and member.is_admin and frozenset(member.scopes) <= principal.scopes:
        return principal.scopes | ADMIN_SCOPES
    return principal.scopes


def _member_decision(action: Action, principal: Principal) -> Decision:
    member = principal.member
    if member is None or not member.active:
        return _deny(Unauthorized(), "member_inactive")
    if not matches_any(action.name, member.allowed_tools):
        return _deny(Forbidden("This agent is not allowed to use this action."), "allowed_tools")
    if not scope_grants(effective_scopes(principal), action.scope, side_effect=action.side_effect):
        error = InsufficientScope(details={"required_scope": _required_scope(action)})
        return _deny(error, "scope")
    return _ALLOW


def _required_scope(action: Action) -> str:
    if action.side_effect and action.scope.endswith(":read"):
        return action.scope[: -len("read")] + "write"
    return action.scope


def _policy_decision(action: Action, payload: Mapping[str, Any], policies: list[Policy]) -> Decision:
    for policy in policies:
        if matches_any(action.name, policy.denied_actions) or not matches_any(action.name, policy.allowed_actions):
            return _deny(PolicyDenied(), "policy_action")
        if matches_any(action.adapter, policy.denied_adapters) or not matches_any(
            action.adapter, policy.allowed_adapters
        ):
            return _deny(PolicyDenied("Company policy does not allow this runtime."), "policy_adapter")
        model = payload.get("model")
        if isinstance(model, str) and not matches_any(model, policy.allowed_models):
            return _deny(PolicyDenied("Company policy does not allow this model."), "policy_model")
        if action.side_effect and not policy.allow_side_effects:
            return _deny(SideEffectsNotAllowed(), "policy_side_effects")
    return _ALLOW


def decide(
    action: Action,
    principal: Principal,
    *,
    dealership: Dealership | None,
    policies: list[Policy],
    payload: Mapping[str, Any] | None = None,
    allow_side_effects: bool = True,
) -> Decision:
    """The single authorization decision for ``principal`` running ``action`` at ``dealership``.

    ``policies`` are those of the company whose data is at stake: the caller's, or for an anonymous
    caller the dealership's company (so a company that turns off, say, lead submission turns it off
    for the public dealer agent too). A dealership named in a call is checked against the caller's
    grants even when the action does not require one, so no adapter ever sees another tenant's id.
    """
    if action.owner_company_id is not None and principal.company_id != action.owner_company_id:
        # Another company's own action (its upstream server's tool) looks exactly like one that does not exist.
        return _deny(UnknownAction(details={"action": action.name[:100]}), "owner")
    if action.side_effect and not allow_side_effects:
        return _deny(SideEffectsNotAllowed(), "meta_side_effects")
    if action.public and not action.side_effect:
        return _ALLOW  # public metadata (agent cards): the same for everyone, credential or not
    if principal.anonymous:
        anonymous = _anonymous_decision(action, dealership)
        return anonymous if not anonymous.allowed else _policy_decision(action, payload or {}, policies)
    if principal.method == "internal":
        # An operator key over the wire administers tenants; dealer data stays with the dealers' own members.
        if principal.key_prefix is not None and action.domain != "admin":
            return _deny(Forbidden("An operator key may run admin actions only."), "operator_scope")
        return _ALLOW
    member_decision = _member_decision(action, principal)
    if not member_decision.allowed:
        return member_decision
    if action.dealer_scoped and dealership is None:
        return _deny(TenancyDenied(), "tenancy")
    if dealership is not None and (
        dealership.company_id != principal.company_id or dealership.id not in principal.dealership_ids
    ):
        return _deny(TenancyDenied(), "tenancy")
    return _policy_decision(action, payload or {}, policies)


def _anonymous_decision(action: Action, dealership: Dealership | None) -> Decision:
    if not action.anonymous_allowed:
        return _deny(Unauthorized(), "anonymous")
    if dealership is None or not dealership.public_agent:
        return _deny(Unauthorized(), "anonymous_private_agent")
    return _ALLOW


class TenancyCache:
    """Dealerships and company policies, read through short-lived in-process caches (``forecourt.caching``).

    Policy edits are seen by the next call on every replica: each is remembered with its company's authority
    generation (``gateway/backends/authority.py``), which every change moves on; dealerships are re-read after
    ``ttl_s`` seconds (documented in docs/operations.md). Every cache is bounded: ids that name no
    dealership are remembered apart, in a small cache of their own, so callers naming rooftops that do not exist
    neither grow memory nor push the real ones out.
    """

    DEALERSHIPS_KEPT = 4096
    UNKNOWN_KEPT = 256
    POLICIES_KEPT = 4096

    def __init__(self, store: Store, ttl_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._dealerships: caching.Cache[str, Dealership] = caching.lru(
            "gateway.tenancy.dealerships", self.DEALERSHIPS_KEPT, max_age_s=ttl_s, clock=clock
        )
        self._unknown: caching.Cache[str, bool] = caching.lru(
            "gateway.tenancy.unknown_dealerships", self.UNKNOWN_KEPT, max_age_s=ttl_s, clock=clock
        )
        self._policies: caching.Cache[str, tuple[Generation, list[Policy]]] = caching.lru(
            "gateway.tenancy.policies", self.POLICIES_KEPT, max_age_s=ttl_s, clock=clock
        )
        self.authority: AuthorityGenerations = MemoryAuthorityGenerations()
        """The companies' authority generations (bootstrap sets the backends' own): remembered policies are used
        only while their company's generation is unchanged, so an edit is seen by the next call on every replica."""
        self.on_invalidate: list[Callable[[], None]] = []
        """Other caches of tenant settings to clear together with this one."""

    async def dealership(self, dealership_id: str) -> Dealership | None:
        """The dealership, or ``None`` when it does not exist."""
        found = self._dealerships.get(dealership_id)
        if found is not None or self._unknown.get(dealership_id):
            return found
        async with self._store.read() as uow:
            found = await uow.tenancy.get_dealership(dealership_id)
        if found is None:
            self._unknown.put(dealership_id, True)
        else:
            self._dealerships.put(dealership_id, found)
        return found

    async def policies(self, company_id: str | None) -> list[Policy]:
        """The company's policies (empty for anonymous and internal callers)."""
        if company_id is None:
            return []
        proposed = overlaid(company_id)
        if proposed is not None:
            return proposed
        generation = await self.authority.current(company_id)
        remembered = self._policies.get(company_id)
        if remembered is not None and remembered[0] == generation:
            return remembered[1]
        async with self._store.read() as uow:
            found = await uow.tenancy.list_policies(company_id)
        self._policies.put(company_id, (generation, found))
        return found

    async def dealership_ids(self, company_id: str) -> list[str]:
        """The ids of a company's dealerships (read each time: used when a stream opens, not per call)."""
        async with self._store.read() as uow:
            return [d.id for d in await uow.tenancy.list_dealerships(company_id)]

    async def oidc_issuers(self) -> list[str]:
        """Every company's configured OIDC issuer (read each time; callers cache)."""
        async with self._store.read() as uow:
            companies = await uow.tenancy.list_companies()
        return sorted({c.oidc_issuer for c in companies if c.oidc_issuer})

    async def company_issuers(self, company_id: str) -> list[str] | None:
        """The company's own OIDC issuer, as a list (``None`` when there is no such company; callers cache)."""
        async with self._store.read() as uow:
            company = await uow.tenancy.get_company(company_id)
        if company is None:
            return None
        return [company.oidc_issuer] if company.oidc_issuer else []

    async def redact_fields(self, company_id: str | None) -> frozenset[str]:
        """The extra fields ``company_id``'s policies redact from results (lower case)."""
        return frozenset(f.lower() for policy in await self.policies(company_id) for f in policy.redact_fields)

    def cached_policies(self, company_id: str) -> list[Policy]:
        """Policies already loaded for ``company_id`` (no I/O; empty when not loaded yet)."""
        proposed = overlaid(company_id)
        if proposed is not None:
            return proposed
        remembered = self._policies.peek(company_id)
        return remembered[1] if remembered is not None else []

    def invalidate(self) -> None:
        """Forget everything (after an admin change on this replica)."""
        self._dealerships.clear()
        self._unknown.clear()
        self._policies.clear()
        for listener in self.on_invalidate:
            listener()
