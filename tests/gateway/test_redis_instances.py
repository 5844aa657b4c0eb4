"""Two app instances sharing one Redis and one database behave as one service (required in CI)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from forecourt.store.base import Store

from .support import HONDA, MOTOR, TOYOTA, Rig, Template, error_code, set_policy, start_rig, stop_rig

pytestmark = pytest.mark.redis
LEAD = {"customer": {"first_name": "Rae", "last_name": "Dis", "email": "rae.dis@example.com"}, "message": "hi"}


@pytest.fixture
async def pair(template: Template, tmp_path: Path, redis_url: str, redis_prefix: str) -> AsyncIterator[tuple[Rig, Rig]]:
    db = template.copy_to(tmp_path)

    async def prepare(store: Store) -> None:
        await set_policy(store, MOTOR, rate_limits={"inventory.facets": 3})

    shared: dict[str, Any] = {"redis_url": redis_url, "redis_prefix": redis_prefix}
    one = await start_rig(template, tmp_path, db=db, prepare=prepare, instance_name="gw-a", **shared)
    two = await start_rig(template, tmp_path, db=db, instance_name="gw-b", **shared)
    assert one.services.backends.kind == two.services.backends.kind == "redis"
    try:
        yield one, two
    finally:
        await stop_rig(one)
        await stop_rig(two)


async def test_a_key_revoked_through_one_instance_is_refused_at_once_by_the_other(pair: tuple[Rig, Rig]) -> None:
    one, two = pair
    assert (await two.call("dealer.information", {"dealership_id": TOYOTA}, key="crm_toyota")).status_code == 200
    prefix = next(r.prefix for r in await one.gateway_keys(MOTOR) if r.name == "crm_toyota")
    revoked = await one.client.delete(
        f"/admin/v1/companies/{MOTOR}/keys/{prefix}", headers={"Authorization": f"Bearer {one.keys['admin']}"}
    )
    assert revoked.status_code == 200
    refused = await two.call("dealer.information", {"dealership_id": TOYOTA}, key="crm_toyota")
    assert (refused.status_code, error_code(refused)) == (401, "auth.unauthorized")


async def test_a_rate_limit_is_counted_across_both_instances(pair: tuple[Rig, Rig]) -> None:
    one, two = pair
    statuses = [(await rig.call("inventory.facets", {"dealership_id": TOYOTA})).status_code for rig in (one, two, one)]
    assert statuses == [200, 200, 200]
    rejected = await two.call("inventory.facets", {"dealership_id": TOYOTA})
    assert (rejected.status_code, error_code(rejected)) == (429, "rate_limited")
    assert rejected.headers["Retry-After"]


async def test_an_idempotency_key_used_on_one_instance_replays_on_the_other(pair: tuple[Rig, Rig]) -> None:
    one, two = pair
    payload = {"dealership_id": TOYOTA, **LEAD}
    first = await one.call("leads.create", payload, headers={"Idempotency-Key": "shared-1"})
    again = await two.call("leads.create", payload, headers={"Idempotency-Key": "shared-1"})
    assert first.json()["result"]["output"]["id"] == again.json()["result"]["output"]["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert (first.json()["audit"]["processedBy"], again.json()["audit"]["processedBy"]) == ("gw-a", "gw-b")
    conflict = await two.call("leads.create", {**payload, "message": "other"}, headers={"Idempotency-Key": "shared-1"})
    assert (conflict.status_code, error_code(conflict)) == (409, "idempotency_conflict")


async def test_a_result_cached_by_one_instance_is_served_by_the_other(pair: tuple[Rig, Rig]) -> None:
    one, two = pair
    first = await one.call("dealer.information", {"dealership_id": TOYOTA})
    second = await two.call("dealer.information", {"dealership_id": TOYOTA})
    assert first.json()["result"] == second.json()["result"]
    hits = two.services.metrics.registry.get_sample_value(
        "forecourt_cache_hits_total", {"action": "dealer.information"}
    )
    assert hits == 1.0


async def test_a_rooftop_removed_from_a_member_through_one_instance_is_refused_by_the_other_at_once(
    pair: tuple[Rig, Rig],
) -> None:
    one, two = pair
    for _ in range(3):  # the other instance remembers the key, its principal and the rooftop
        assert (await two.call("dealer.information", {"dealership_id": HONDA})).status_code == 200
    listed = await one.call("admin.members.list", {"company_id": MOTOR}, key="admin")
    member = next(m for m in listed.json()["result"]["output"]["items"] if m["id"] == "crm-agent")
    saved = await one.call(
        "admin.members.upsert", {"company_id": MOTOR, "member": {**member, "dealership_ids": [TOYOTA]}}, key="admin"
    )
    assert saved.status_code == 200, saved.text
    refused = await two.call("dealer.information", {"dealership_id": HONDA})
    assert (refused.status_code, error_code(refused)) == (403, "auth.tenancy_denied")


async def test_a_policy_edit_through_one_instance_applies_to_the_others_next_call(pair: tuple[Rig, Rig]) -> None:
    one, two = pair
    assert (await two.call("dealer.information", {"dealership_id": TOYOTA})).status_code == 200
    policy = {"id": f"{MOTOR}-default", "name": "default", "denied_actions": ["dealer.information"]}
    saved = await one.call("admin.policies.upsert", {"company_id": MOTOR, "policy": policy}, key="admin")
    assert saved.status_code == 200, saved.text
    assert (await two.call("dealer.information", {"dealership_id": TOYOTA})).status_code == 403


async def test_one_call_reads_its_companys_authority_generation_from_redis_once(
    template: Template, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    from forecourt.gateway.backends.authority import RedisAuthorityGenerations

    rig = await start_rig(template, tmp_path, redis_url=redis_url, redis_prefix=redis_prefix)
    try:
        generations = rig.services.gateway.tenancy.authority
        assert isinstance(generations, RedisAuthorityGenerations)
        client, reads = generations._client, []
        mget = client.mget

        async def counted(*keys: Any, **kwargs: Any) -> Any:
            reads.append(keys)
            return await mget(*keys, **kwargs)

        client.mget = counted
        assert (await rig.call("inventory.facets", {"dealership_id": TOYOTA})).status_code == 200
        reads.clear()
        assert (await rig.call("inventory.facets", {"dealership_id": TOYOTA})).status_code == 200
        # the principal is resolved at the door, before the call; inside the call: policies, limits, redaction
        assert len(reads) <= 2, reads
        assert reads.count(reads[-1]) == 1
    finally:
        await stop_rig(rig)
