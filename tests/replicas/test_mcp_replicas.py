"""MCP through a round-robin proxy in front of two replicas, in both protocol eras: no "session not found".

The proxy sends every request to the other replica than the one before, so a legacy client's ``initialize``,
``notifications/initialized``, ``GET`` stream and calls are spread over both processes.
"""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from replicas.support import TOYOTA, Cluster, poll

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

LEADS = f"automotive://dealers/{TOYOTA}/leads"


def _client(cluster: Cluster, hc: httpx2.AsyncClient, mode: str, **kwargs: Any) -> Client:
    return Client(streamable_http_client(f"{cluster.url}/mcp", http_client=hc), mode=mode, **kwargs)  # type: ignore[arg-type]


def _http(cluster: Cluster) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {cluster.keys['crm']}"}, timeout=httpx2.Timeout(30, read=60)
    )


def _served(cluster: Cluster, before: dict[int, int]) -> set[int]:
    after = cluster.proxy.counts
    return {port for port, count in after.items() if count > before.get(port, 0)}


async def _search_two_pages(client: Client) -> tuple[list[str], list[str]]:
    first = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": 3})
    assert not first.is_error, first.structured_content
    assert first.structured_content is not None
    cursor = first.structured_content["next_cursor"]
    second = await client.call_tool("inventory.search", {"dealership_id": TOYOTA, "limit": 3, "cursor": cursor})
    assert not second.is_error, second.structured_content
    assert second.structured_content is not None
    return (
        [v["id"] for v in first.structured_content["items"]],
        [v["id"] for v in second.structured_content["items"]],
    )


async def _create_lead_over_rest(cluster: Cluster, n: int) -> None:
    body = {
        "id": f"lead-{n}",
        "payload": {
            "dealership_id": TOYOTA,
            "customer": {"first_name": "Rep", "last_name": f"Lica{n}", "email": f"replica{n}@example.com"},
            "message": "Still available?",
        },
    }
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(
            f"{cluster.url}/mcp/leads.create", json=body, headers={"Authorization": f"Bearer {cluster.keys['crm']}"}
        )
    assert response.status_code == 200, response.text


async def test_stateless_era_calls_alternate_replicas_and_page_across_them(cluster: Cluster) -> None:
    before = cluster.proxy.counts
    async with _http(cluster) as hc, _client(cluster, hc, "2026-07-28") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        page1, page2 = await _search_two_pages(client)
        page3, _ = await _search_two_pages(client)
    assert {"inventory.search", "leads.create"} <= tools
    assert len(page2) == 3
    assert not set(page1) & set(page2)
    assert page3 == page1
    assert len(_served(cluster, before)) == 2


async def test_a_legacy_session_works_whichever_replica_each_request_lands_on(cluster: Cluster) -> None:
    before = cluster.proxy.counts
    async with _http(cluster) as hc, _client(cluster, hc, "legacy") as client:
        for _ in range(3):  # every request alternates replicas; none may answer "session not found"
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "inventory.search" in tools
        page1, page2 = await _search_two_pages(client)
        await client.list_resource_templates()
    assert len(page2) == 3
    assert not set(page1) & set(page2)
    assert len(_served(cluster, before)) == 2


async def test_a_legacy_subscriber_hears_a_change_made_through_the_other_replica(cluster: Cluster) -> None:
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            seen.append(str(message.params.uri))

    streams = cluster.proxy.streams_opened
    async with _http(cluster) as hc, _client(cluster, hc, "legacy", message_handler=on_message) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(LEADS)  # lands on a replica other than the one holding the stream
        await poll(_true_when(lambda: cluster.proxy.streams_opened > streams), 10.0, "the legacy GET stream")
        await _create_lead_over_rest(cluster, 1)
        await poll(_true_when(lambda: LEADS in seen), 10.0, "the resource-updated notification")


async def test_a_listen_stream_on_one_replica_hears_a_change_made_through_the_other(cluster: Cluster) -> None:
    async with (
        _http(cluster) as hc,
        _client(cluster, hc, "2026-07-28") as client,
        client.listen(resource_subscriptions=[LEADS]) as sub,
    ):
        await _create_lead_over_rest(cluster, 2)
        with anyio.fail_after(10):
            async for event in sub:
                assert str(event.uri) == LEADS  # type: ignore[union-attr]
                break


def _true_when(predicate: Any) -> Any:
    async def check() -> bool:
        return bool(predicate())

    return check
