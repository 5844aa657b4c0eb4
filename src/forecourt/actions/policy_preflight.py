"""Policy pre-flight: what a would-be policy does to the company's public agents and members' tools, unsaved.

``admin.policies.preflight`` runs the AAP v0.1 conformance checks (:mod:`forecourt.adapters.aap.checker`, lead
submission skipped) against every public dealer agent of the company through the real front door and
gateway, once with the stored policies and once with the proposed one (:func:`policy_overlay`), and lists
the MCP tools each member would see. A check that passes today and fails with the proposal is a break:
``ok`` is false and the console refuses to save (the admin API answers the same with ``?dry_run=true``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from forecourt import caching
from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.console_common import console_action, require_admin
from forecourt.actions.toolsets import offered
from forecourt.contract import Principal
from forecourt.contract.overlay import policy_overlay
from forecourt.domain.tenancy import Policy
from forecourt.errors import InvalidParams

if TYPE_CHECKING:
    import httpx

    from forecourt.gateway.pipeline import Gateway

ADAPTER_ID = "policy_preflight"
AGENTS_CHECKED = 3
"""Public dealer agents checked per pre-flight: a policy is the company's, the same for every rooftop, so a few
rooftops show what it does to all of them (a group with 1,000 public agents would otherwise pay 2,000 runs)."""
Checks = list[tuple[str, bool, str]]
_BEFORE: caching.Cache[tuple[str, str, bytes], Checks] = caching.lru(
    "preflight.stored_policy_checks", 256, max_age_s=60
)
"""The checks with the stored policies, by company, rooftop and the stored policies' value: each click of the
console's "check" pays only for the proposal (a minute at most old)."""

PREFLIGHT_ACTIONS: tuple[Action, ...] = (
    console_action(
        "admin.policies.preflight",
        "Check a would-be policy without saving it: AAP conformance of every public dealer agent and the MCP "
        "tools each member would see. `ok` is false when the change would break a public agent.",
        {"policy": {"type": "object"}},
        ["policy"],
        adapter=ADAPTER_ID,
        write=False,
    ),
)


def parse_policy(data: Any, company_id: str) -> Policy:
    """The proposed policy, validated; :class:`InvalidParams` names what is wrong."""
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise InvalidParams("An object is required.")
    try:
        return Policy.model_validate({**data, "company_id": company_id})
    except ValidationError as exc:
        problems = [{"path": "/" + "/".join(str(p) for p in e["loc"]), "rule": e["type"]} for e in exc.errors()[:8]]
        raise InvalidParams("The policy is invalid.", details={"errors": problems}) from None


class PolicyPreflight:
    """The ``policy_preflight`` adapter; ``transport`` reaches this process's own app (set by bootstrap)."""

    id = ADAPTER_ID

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.transport: httpx.AsyncBaseTransport | None = None

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the checks with the stored and the proposed policies and compare."""
        company_id = str(payload["company_id"])
        require_admin(context, company_id)
        proposed = parse_policy(payload["policy"], company_id)
        async with context.store.read() as uow:
            current = await uow.tenancy.list_policies(company_id)
            dealerships = await uow.tenancy.list_dealerships(company_id)
            members = await uow.tenancy.list_members(company_id)
        would_be = [p for p in current if p.id != proposed.id] + [proposed]
        public = [d for d in dealerships if d.public_agent]
        stored = orjson.dumps([p.model_dump(mode="json") for p in current], option=orjson.OPT_SORT_KEYS)
        agents = list(
            await asyncio.gather(*(self._agent(d.id, company_id, stored, would_be) for d in public[:AGENTS_CHECKED]))
        )
        tools = [await self._tools(m, current, would_be, company_id) for m in members if m.active]
        ok = not any(a["breaks"] for a in agents)
        output = {
            "ok": ok,
            "policy": proposed.model_dump(mode="json"),
            "agents": agents,
            "public_agents": len(public),
            "members": tools,
        }
        return AdapterResult(output=output, result_type="admin.result")

    async def _agent(self, dealership_id: str, company_id: str, stored: bytes, would_be: list[Policy]) -> Any:
        """One public agent's checks with the stored policies (cached a minute) and with the proposal, together."""
        key = (company_id, dealership_id, stored)
        cached = _BEFORE.get(key)
        if cached is None:
            before, after = await asyncio.gather(
                self._aap(dealership_id, None, company_id), self._aap(dealership_id, would_be, company_id)
            )
            _BEFORE.put(key, before)
        else:
            before, after = cached, await self._aap(dealership_id, would_be, company_id)
        passing = {rule for rule, ok, _ in before if ok}
        broken = [{"rule": r, "detail": d} for r, ok, d in after if not ok and r in passing]
        failing = [{"rule": r, "detail": d} for r, ok, d in after if not ok]
        return {"dealership_id": dealership_id, "checks": len(after), "failures": failing, "breaks": broken}

    async def _aap(self, dealership_id: str, policies: list[Policy] | None, company_id: str) -> Checks:
        import httpx

        from forecourt.adapters.aap.checker import run_check

        if self.transport is None:
            return [("preflight.available", False, "the pre-flight cannot reach the dealer agent in this process")]
        base = self.gateway.settings.advertised_url
        async with httpx.AsyncClient(transport=self.transport, base_url=base, timeout=30.0) as http:
            if policies is None:
                report = await run_check(f"{base}/dealers/{dealership_id}", leads=False, http=http)
            else:
                with policy_overlay(company_id, policies):
                    report = await run_check(f"{base}/dealers/{dealership_id}", leads=False, http=http)
        return [
            (c.rule if c.ok or c.warning else f"{c.rule}", c.ok or c.warning, c.detail[:300]) for c in report.checks
        ]

    async def _tools(self, member: Any, current: list[Policy], would_be: list[Policy], company_id: str) -> Any:
        principal = Principal.of_member(member)
        with policy_overlay(company_id, current):
            before = [a for a in await self.gateway.allowed_actions(principal, None) if a.domain != "admin"]
        with policy_overlay(company_id, would_be):
            after = [a for a in await self.gateway.allowed_actions(principal, None) if a.domain != "admin"]
        # What tools/list offers: the callable tools in the member's toolset and the policies' (actions/toolsets.py).
        listed_before = {a.name for a in before if offered(a, member.toolset, current)}
        listed_after = {a.name for a in after if offered(a, member.toolset, would_be)}
        names_before, names_after = {a.name for a in before}, {a.name for a in after}
        return {
            "member_id": member.id,
            "tools": len(names_after),
            "lost": sorted(names_before - names_after)[:50],
            "gained": sorted(names_after - names_before)[:50],
            "listed": len(listed_after),
            "unlisted": sorted(listed_before - listed_after)[:50],
            "newly_listed": sorted(listed_after - listed_before)[:50],
        }


def register_policy_preflight(catalogue: Catalogue, gateway: Gateway) -> PolicyPreflight:
    """Add ``admin.policies.preflight`` and its adapter; bootstrap sets the adapter's transport."""
    for action in PREFLIGHT_ACTIONS:
        catalogue.add(action)
    adapter = PolicyPreflight(gateway)
    catalogue.add_adapter(adapter)
    return adapter
