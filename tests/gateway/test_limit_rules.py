"""Which limits count a call: the plan's rules for the principal, the action and the company's policies."""

from __future__ import annotations

from forecourt.actions.inventory import ACTIONS
from forecourt.domain.tenancy import Policy
from forecourt.gateway.base import Principal
from forecourt.gateway.limits import LimitPlan

PLAN = LimitPlan(company_per_minute=100, member_per_minute=50, action_per_minute=10, anonymous_per_minute=5)
BY_NAME = {a.name: a for a in ACTIONS}
SEARCH = BY_NAME.get("inventory.search")
MEMBER = Principal(method="api_key", company_id="c1", member_id="m1")


def test_new_policies_give_new_rules_at_once() -> None:
    assert SEARCH is not None
    before = list(PLAN.rules_for(SEARCH, MEMBER, [], "c1"))
    tighter = [Policy(id="p1", company_id="c1", rate_limits={"member_per_minute": 2, "inventory.search": 1})]
    after = list(PLAN.rules_for(SEARCH, MEMBER, tighter, "c1"))
    assert {r.scope: r.limit for r in before} == {"company": 100, "member": 50, "action": 10}
    assert {r.scope: r.limit for r in after} == {"company": 100, "member": 2, "action": 1}


def test_another_member_or_action_never_counts_against_the_same_member_or_action_keys() -> None:
    search, get = BY_NAME.get("inventory.search"), BY_NAME.get("inventory.get")
    assert search is not None
    assert get is not None
    other = Principal(method="api_key", company_id="c1", member_id="m2")
    mine = list(PLAN.rules_for(search, MEMBER, [], "c1"))
    theirs = list(PLAN.rules_for(search, other, [], "c1"))
    for_get = list(PLAN.rules_for(get, MEMBER, [], "c1"))
    assert {r.key for r in mine}.isdisjoint({r.key for r in theirs if r.scope != "company"})
    assert [r.key for r in for_get] != [r.key for r in mine]


def test_anonymous_callers_are_counted_by_their_address() -> None:
    assert SEARCH is not None
    for n in range(3):
        caller = Principal(method="anonymous", company_id=None, member_id=None, client_address=f"10.0.0.{n}")
        assert next(iter(PLAN.rules_for(SEARCH, caller, [], "c1"))).key == f"rl:anon:10.0.0.{n}"
