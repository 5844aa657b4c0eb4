"""Which limits count a call: remembered per principal and policies, and never stale after a policy change."""

from __future__ import annotations

from forecourt.actions.inventory import ACTIONS
from forecourt.domain.tenancy import Policy
from forecourt.gateway.base import Principal
from forecourt.gateway.limits import LimitPlan, RememberedRules

PLAN = LimitPlan(company_per_minute=100, member_per_minute=50, action_per_minute=10, anonymous_per_minute=5)
BY_NAME = {a.name: a for a in ACTIONS}
SEARCH = BY_NAME.get("inventory.search")
MEMBER = Principal(method="api_key", company_id="c1", member_id="m1")


def test_the_same_principal_and_policies_get_the_rules_the_plan_gives() -> None:
    assert SEARCH is not None
    remembered = RememberedRules()
    policies: list[Policy] = []
    rules, hits = remembered.rules_for(PLAN, SEARCH, MEMBER, policies, "c1")
    assert rules == tuple(PLAN.rules_for(SEARCH, MEMBER, policies, "c1"))
    assert hits == tuple((r.key, r.limit, r.window_s) for r in rules)
    again, _ = remembered.rules_for(PLAN, SEARCH, MEMBER, policies, "c1")
    assert again is rules


def test_new_policies_give_new_rules_at_once() -> None:
    assert SEARCH is not None
    remembered = RememberedRules()
    before, _ = remembered.rules_for(PLAN, SEARCH, MEMBER, [], "c1")
    tighter = [Policy(id="p1", company_id="c1", rate_limits={"member_per_minute": 2, "inventory.search": 1})]
    after, hits = remembered.rules_for(PLAN, SEARCH, MEMBER, tighter, "c1")
    assert {r.scope: r.limit for r in before} == {"company": 100, "member": 50, "action": 10}
    assert {r.scope: r.limit for r in after} == {"company": 100, "member": 2, "action": 1}
    assert [limit for _, limit, _ in hits] == [r.limit for r in after]


def test_another_member_or_action_never_gets_a_remembered_rule() -> None:
    search, get = BY_NAME.get("inventory.search"), BY_NAME.get("inventory.get")
    assert search is not None
    assert get is not None
    remembered = RememberedRules()
    policies: list[Policy] = []
    other = Principal(method="api_key", company_id="c1", member_id="m2")
    mine, _ = remembered.rules_for(PLAN, search, MEMBER, policies, "c1")
    theirs, _ = remembered.rules_for(PLAN, search, other, policies, "c1")
    for_get, _ = remembered.rules_for(PLAN, get, MEMBER, policies, "c1")
    assert {r.key for r in mine}.isdisjoint({r.key for r in theirs if r.scope != "company"})
    assert [r.key for r in for_get] != [r.key for r in mine]


def test_anonymous_callers_are_not_remembered_and_the_memo_stays_bounded() -> None:
    assert SEARCH is not None
    remembered = RememberedRules(kept=3)
    policies: list[Policy] = []
    for n in range(10):
        caller = Principal(method="anonymous", company_id=None, member_id=None, client_address=f"10.0.0.{n}")
        rules, _ = remembered.rules_for(PLAN, SEARCH, caller, policies, "c1")
        assert rules[0].key == f"rl:anon:10.0.0.{n}"
        member = Principal(method="api_key", company_id="c1", member_id=f"m{n}")
        remembered.rules_for(PLAN, SEARCH, member, policies, "c1")
    assert len(remembered._found) <= 3
