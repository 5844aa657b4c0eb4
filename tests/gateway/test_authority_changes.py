"""A change to a member, a key or a policy is seen by the very next call (in one process; across replicas the
Redis suite in test_redis_instances.py says the same)."""

from __future__ import annotations

from typing import Any

from forecourt.gateway.base import Invocation, Principal

from .support import HONDA, MOTOR, TOYOTA, Rig, error_code


async def _member(rig: Rig, member_id: str) -> dict[str, Any]:
    listed = await rig.call("admin.members.list", {"company_id": MOTOR}, key="admin")
    return next(m for m in listed.json()["result"]["output"]["items"] if m["id"] == member_id)


async def _save_member(rig: Rig, member: dict[str, Any], key: str = "admin") -> None:
    saved = await rig.call("admin.members.upsert", {"company_id": MOTOR, "member": member}, key=key)
    assert saved.status_code == 200, saved.text


async def test_a_rooftop_removed_from_a_member_is_refused_on_the_next_call(rig: Rig) -> None:
    for _ in range(3):  # remembered: the key, its principal, the rooftop
        assert (await rig.call("inventory.facets", {"dealership_id": HONDA})).status_code == 200
    member = await _member(rig, "crm-agent")
    await _save_member(rig, {**member, "dealership_ids": [TOYOTA]})
    refused = await rig.call("inventory.facets", {"dealership_id": HONDA})
    assert (refused.status_code, error_code(refused)) == (403, "auth.tenancy_denied")
    assert (await rig.call("inventory.facets", {"dealership_id": TOYOTA})).status_code == 200


async def test_an_admin_flag_cleared_is_refused_on_the_next_call(rig: Rig) -> None:
    assert (await rig.call("admin.members.list", {"company_id": MOTOR}, key="admin")).status_code == 200
    operator = Principal(method="internal", company_id=None, member_id=None, subject="operator")
    changes = {"company_id": MOTOR, "member_id": "ops-admin", "changes": {"admin": False}}
    await rig.services.gateway.invoke(
        Invocation(action="admin.members.update", payload=changes, surface="cli", principal=operator)
    )
    refused = await rig.call("admin.members.list", {"company_id": MOTOR}, key="admin")
    assert refused.status_code == 403


async def test_a_policy_edit_is_applied_to_the_next_call(rig: Rig) -> None:
    assert (await rig.call("inventory.facets", {"dealership_id": TOYOTA})).status_code == 200
    policy = {"id": f"{MOTOR}-default", "name": "default", "denied_actions": ["inventory.facets"]}
    saved = await rig.call("admin.policies.upsert", {"company_id": MOTOR, "policy": policy}, key="admin")
    assert saved.status_code == 200, saved.text
    denied = await rig.call("inventory.facets", {"dealership_id": TOYOTA})
    assert denied.status_code == 403
