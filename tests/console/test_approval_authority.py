"""Who may decide a held call: never the caller that made it, and only with authority over the call's rooftop."""

from __future__ import annotations

from typing import Any

import httpx

from console.conftest import csrf_of, sign_in
from forecourt.gateway.auth.apikeys import ApiKeyService
from forecourt.gateway.backends.memory import MemoryRevocationList
from gateway.support import HONDA, MOTOR, TOYOTA, Rig, error_code

RULE = {"action": "leads.update", "field": "status", "op": "eq", "value": "lost"}


async def _require_approval(rig: Rig) -> None:
    headers = {"Authorization": f"Bearer {rig.keys['admin']}"}
    put = await rig.client.put(
        f"/admin/v1/companies/{MOTOR}/policies/{MOTOR}-default", json={"require_approval": [RULE]}, headers=headers
    )
    assert put.status_code == 200, put.text


async def _held(rig: Rig, dealership: str, key: str = "crm") -> str:
    listing = await rig.call("leads.list", {"dealership_id": dealership, "limit": 5}, key=key)
    items = listing.json()["result"]["output"]["items"]
    lead_id = next(item["id"] for item in items if item["status"] in ("new", "contacted"))
    held = await rig.call("leads.update", {"dealership_id": dealership, "lead_id": lead_id, "status": "lost"}, key=key)
    assert error_code(held) == "approval.pending"
    return str(held.json()["status"]["error"]["details"]["approval_id"])


async def _make_crm_agent_an_admin(rig: Rig) -> None:
    async with rig.services.store.transaction() as uow:
        member = await uow.tenancy.get_member(MOTOR, "crm-agent")
        assert member is not None
        await uow.tenancy.upsert_member(member.model_copy(update={"is_admin": True}))
    rig.services.gateway.tenancy.invalidate()


async def _key(rig: Rig, member: str, **kwargs: Any) -> str:
    service = ApiKeyService.from_settings(rig.services.settings, rig.services.store, MemoryRevocationList())
    return (await service.create(MOTOR, member, name=f"{member}-extra", **kwargs)).key


async def test_an_agent_with_admin_rights_cannot_approve_its_own_held_call_on_any_door(rig: Rig) -> None:
    await _require_approval(rig)
    await _make_crm_agent_an_admin(rig)
    fresh_key = await _key(rig, "crm-agent")  # a second key of the same member is the same caller
    approval_id = await _held(rig, TOYOTA)
    decide = {"company_id": MOTOR, "approval_id": approval_id, "decision": "approve"}
    for key in ("crm", fresh_key):
        refused = await rig.call("approvals.decide", decide, key=key)
        assert refused.status_code == 403
        assert error_code(refused) == "approval.self_decision"
    async with httpx.AsyncClient(transport=rig.client._transport, base_url="http://forecourt.test") as client:
        await sign_in(client, rig.keys["crm"])
        page = await client.get("/console/approvals")
        posted = await client.post(
            f"/console/approvals/held/{approval_id}", data={"csrf": csrf_of(page.text), "decision": "approve"}
        )
        assert posted.status_code == 403
    waiting = await rig.call("approvals.get", {"approval_id": approval_id})
    assert waiting.json()["result"]["output"]["status"] == "pending"
    decided = await rig.call("approvals.decide", decide, key="admin")  # another person decides it
    assert decided.json()["result"]["output"]["decided_by"] == "ops-admin"


async def test_an_admin_bound_to_one_rooftop_neither_lists_nor_decides_a_call_held_at_another(rig: Rig) -> None:
    await _require_approval(rig)
    toyota_admin = await _key(rig, "ops-admin", dealership_ids=(TOYOTA,))
    at_honda = await _held(rig, HONDA)
    at_toyota = await _held(rig, TOYOTA)
    listed = await rig.call("approvals.list", {"company_id": MOTOR}, key=toyota_admin)
    ids = [item["id"] for item in listed.json()["result"]["output"]["items"]]
    assert at_toyota in ids
    assert at_honda not in ids
    decide = {"company_id": MOTOR, "approval_id": at_honda, "decision": "approve"}
    refused = await rig.call("approvals.decide", decide, key=toyota_admin)
    assert refused.status_code == 404
    still = await rig.call("approvals.get", {"approval_id": at_honda})
    assert still.json()["result"]["output"]["status"] == "pending"
    everywhere = await rig.call("approvals.list", {"company_id": MOTOR}, key="admin")
    assert at_honda in [item["id"] for item in everywhere.json()["result"]["output"]["items"]]


async def test_the_approvals_page_of_an_admin_bound_to_one_rooftop_lists_only_its_held_calls(rig: Rig) -> None:
    await _require_approval(rig)
    toyota_admin = await _key(rig, "ops-admin", dealership_ids=(TOYOTA,))
    at_honda = await _held(rig, HONDA)
    at_toyota = await _held(rig, TOYOTA)
    page = await rig.call("console.approvals.page", {"company_id": MOTOR, "status": "pending"}, key=toyota_admin)
    output = page.json()["result"]["output"]
    assert [item["id"] for item in output["items"]] == [at_toyota]
    assert output["total"] == 1  # counted in SQL under the same scope, not trimmed after the page was read
    everywhere = await rig.call("console.approvals.page", {"company_id": MOTOR, "status": "pending"}, key="admin")
    assert {at_honda, at_toyota} <= {item["id"] for item in everywhere.json()["result"]["output"]["items"]}
