"""Tenancy edges: anonymous callers of a public dealer agent, and dealerships named in non-dealer actions."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sized
from typing import Any

import pytest

from forecourt.contract import ExecutionContext
from forecourt.errors import ForecourtError
from forecourt.gateway.base import Credentials, Invocation
from forecourt.gateway.policy import TenancyCache
from forecourt.store.base import Store

from .support import BAY_SJ, MOTOR, TOYOTA, Rig, error_code, register_action, set_policy

MakeRig = Callable[..., Awaitable[Rig]]


def anonymous(action: str, dealership: str = TOYOTA) -> Invocation:
    return Invocation(
        action=action,
        payload={},
        credentials=Credentials(peer_address="203.0.113.9"),
        surface="a2a",
        anonymous_dealership=dealership,
    )


async def test_an_anonymous_call_to_a_public_dealer_agent_is_audited_under_that_dealers_company(rig: Rig) -> None:
    register_action(rig.services, "test.public", anonymous_allowed=True)
    outcome = await rig.gateway.invoke(anonymous("test.public"))
    assert outcome.output == {"ok": True}
    rows = await rig.audit_rows()
    assert [(r["company_id"], r["dealership_id"], r["member_id"], r["surface"]) for r in rows] == [
        (MOTOR, TOYOTA, None, "a2a")
    ]


async def test_an_anonymous_caller_cannot_use_an_action_that_is_not_public(rig: Rig) -> None:
    register_action(rig.services, "test.private")
    with pytest.raises(ForecourtError) as info:
        await rig.gateway.invoke(anonymous("test.private"))
    assert info.value.code == "auth.unauthorized"


async def test_the_dealers_company_policy_applies_to_anonymous_callers(make_rig: MakeRig) -> None:
    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, denied_actions=("test.public",))

    rig = await make_rig(prepare=prepare)
    register_action(rig.services, "test.public", anonymous_allowed=True)
    with pytest.raises(ForecourtError) as info:
        await rig.gateway.invoke(anonymous("test.public"))
    assert info.value.code == "policy.denied"
    # The other company's public agent is not affected by this company's policy.
    assert (await rig.gateway.invoke(anonymous("test.public", BAY_SJ))).output == {"ok": True}


async def test_a_dealership_named_in_an_action_that_does_not_need_one_must_still_be_the_callers(rig: Rig) -> None:
    seen: list[Any] = []

    async def handler(payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        seen.append(ctx.dealership_id)
        return {"ok": True}

    register_action(rig.services, "test.anywhere", handler, dealer_scoped=False)
    assert (await rig.call("test.anywhere", {})).status_code == 200
    assert (await rig.call("test.anywhere", {"dealership_id": TOYOTA})).status_code == 200
    response = await rig.call("test.anywhere", {"dealership_id": BAY_SJ})
    assert (response.status_code, error_code(response)) == (403, "auth.tenancy_denied")
    assert seen == [None, TOYOTA]


async def test_a_key_bound_to_one_dealership_needs_no_dealership_id(rig: Rig) -> None:
    response = await rig.call("dealer.information", {}, key="crm_toyota")
    assert response.status_code == 200
    assert response.json()["result"]["output"]["id"] == TOYOTA


async def test_a_key_for_several_dealerships_must_name_one(rig: Rig) -> None:
    response = await rig.call("dealer.information", {})
    assert (response.status_code, error_code(response)) == (422, "invalid_params")
    assert response.json()["status"]["error"]["details"]["errors"][0]["path"] == "/dealership_id"


def _entries_held(holder: object) -> int:
    """Entries in every container an object keeps (its caches, whatever they are made of)."""
    return sum(len(v) for v in vars(holder).values() if isinstance(v, Sized) and not isinstance(v, str | bytes))


async def test_calls_naming_rooftops_that_do_not_exist_cannot_grow_the_tenancy_cache(rig: Rig) -> None:
    for _ in range(TenancyCache.UNKNOWN_KEPT * 2 + 100):  # well past the bound: an unbounded cache would hold them all
        call = Invocation(
            action="dealer.information",
            payload={"dealership_id": f"nope-{uuid.uuid4()}"},
            credentials=Credentials(bearer=rig.keys["crm"]),
            surface="rest",
        )
        with pytest.raises(ForecourtError) as info:
            await rig.gateway.invoke(call)
        assert info.value.code == "auth.tenancy_denied"
    assert _entries_held(rig.gateway.tenancy) <= 300  # a few hundred unknown ids at most, whoever asks
    assert (await rig.call("dealer.information", {"dealership_id": TOYOTA})).status_code == 200
