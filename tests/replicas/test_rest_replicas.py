"""The REST envelope through a round-robin proxy in front of two replicas: they behave as one service."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from replicas.support import MOTOR, RATE_LIMIT, RATE_LIMITED_ACTION, TOYOTA, Cluster

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


async def _call(
    client: httpx.AsyncClient, cluster: Cluster, action: str, payload: dict[str, Any], key: str = "crm", **headers: str
) -> httpx.Response:
    sent = {"Authorization": f"Bearer {cluster.keys.get(key, key)}", **headers}
    return await client.post(f"{cluster.url}/mcp/{action}", json={"id": "r1", "payload": payload}, headers=sent)


def _served_by(response: httpx.Response) -> str:
    return str(response.json()["audit"]["processedBy"])


def _code(response: httpx.Response) -> str:
    return str(response.json()["status"]["error"]["code"])


async def test_consecutive_calls_are_served_by_both_replicas(cluster: Cluster) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        responses = [await _call(client, cluster, "inventory.search", {"dealership_id": TOYOTA}) for _ in range(4)]
    assert [r.status_code for r in responses] == [200] * 4
    assert {_served_by(r) for r in responses} == {"replica-a", "replica-b"}


async def test_a_policy_rate_limit_holds_across_replicas(cluster: Cluster) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        responses = [
            await _call(client, cluster, RATE_LIMITED_ACTION, {"dealership_id": TOYOTA}) for _ in range(RATE_LIMIT + 2)
        ]
    allowed = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code != 200]
    assert len(allowed) == RATE_LIMIT  # one budget, although both replicas served calls
    assert {_served_by(r) for r in allowed} == {"replica-a", "replica-b"}
    assert [(r.status_code, _code(r)) for r in refused] == [(429, "rate_limited")] * 2


async def test_an_idempotency_key_replayed_on_the_other_replica_returns_the_same_lead(cluster: Cluster) -> None:
    lead = {
        "dealership_id": TOYOTA,
        "customer": {"first_name": "Ida", "last_name": "Empotent", "email": "ida@example.com"},
        "message": "Is the Prius still there?",
    }
    async with httpx.AsyncClient(timeout=10) as client:
        first = await _call(client, cluster, "leads.create", lead, **{"Idempotency-Key": "replica-idem-1"})
        again = await _call(client, cluster, "leads.create", lead, **{"Idempotency-Key": "replica-idem-1"})
    assert (first.status_code, again.status_code) == (200, 200), (first.text, again.text)
    assert _served_by(first) != _served_by(again)
    out1, out2 = first.json()["result"]["output"], again.json()["result"]["output"]
    assert out1.get("lead_id", out1.get("id")) == out2.get("lead_id", out2.get("id"))


async def test_a_key_revoked_through_one_replica_is_refused_by_every_replica(cluster: Cluster) -> None:
    doomed = cluster.keys["doomed"]
    prefix = doomed.split("_")[1]
    replica_a = cluster.by_name("replica-a")
    async with httpx.AsyncClient(timeout=10) as client:
        before = await _call(client, cluster, "inventory.search", {"dealership_id": TOYOTA}, key="doomed")
        revoked = await client.delete(
            f"{replica_a.url}/admin/v1/companies/{MOTOR}/keys/{prefix}",
            headers={"Authorization": f"Bearer {cluster.keys['admin']}"},
        )
        after = [
            await _call(client, cluster, "inventory.search", {"dealership_id": TOYOTA}, key="doomed") for _ in range(2)
        ]
    assert before.status_code == 200
    assert revoked.status_code == 200, revoked.text
    assert [(r.status_code, _code(r)) for r in after] == [(401, "auth.unauthorized")] * 2
    assert {_served_by(r) for r in after} == {"replica-a", "replica-b"}


async def test_a_cursor_minted_by_one_replica_is_accepted_by_the_other(cluster: Cluster) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        first = await _call(client, cluster, "inventory.search", {"dealership_id": TOYOTA, "limit": 3})
        cursor = first.json()["result"]["output"]["next_cursor"]
        page = {"dealership_id": TOYOTA, "limit": 3, "cursor": cursor}
        second = await _call(client, cluster, "inventory.search", page)
    assert (first.status_code, second.status_code) == (200, 200), second.text
    assert _served_by(first) != _served_by(second)
    page1 = {v["id"] for v in first.json()["result"]["output"]["items"]}
    page2 = {v["id"] for v in second.json()["result"]["output"]["items"]}
    assert len(page2) == 3
    assert not page1 & page2
