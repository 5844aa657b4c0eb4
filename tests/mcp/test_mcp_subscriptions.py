"""Level 3 eventing: a change made by another client reaches subscribers in both protocol eras."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import MCPError
from mcp_support import BAY_SJ, TOYOTA, LiveServer, Template, http_client, mcp_client, settings_for, wait_for

LEADS = f"automotive://dealers/{TOYOTA}/leads"


def _lead(n: int) -> dict[str, Any]:
    return {
        "dealership_id": TOYOTA,
        "customer": {"first_name": "Dana", "last_name": f"Lee{n}", "email": f"dana{n}@example.com"},
        "message": "Is the Corolla still available?",
    }


async def _create_lead(live: LiveServer, key: str, n: int) -> str:
    async with http_client(key) as hc, mcp_client(live.url, hc, "auto") as other:
        result = await other.call_tool("leads.create", _lead(n))
    assert not result.is_error, result.structured_content
    return str(
        result.structured_content["lead_id"]
        if "lead_id" in result.structured_content
        else result.structured_content["id"]
    )


async def test_legacy_subscription_hears_another_clients_lead(live: LiveServer, keys: dict[str, str]) -> None:
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            seen.append(str(message.params.uri))

    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "legacy", message_handler=on_message) as client:
        assert client.server_capabilities.resources is not None
        assert client.server_capabilities.resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(LEADS)
        lead_id = await _create_lead(live, keys["crm"], 1)
        await wait_for(lambda: LEADS in seen, 10.0)
        assert f"{LEADS}/{lead_id}" not in seen  # only what was subscribed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(f"{LEADS}/{lead_id}")
        async with http_client(keys["crm"]) as hc2, mcp_client(live.url, hc2, "auto") as other:
            await other.call_tool("leads.update", {"dealership_id": TOYOTA, "lead_id": lead_id, "status": "contacted"})
        await wait_for(lambda: f"{LEADS}/{lead_id}" in seen, 10.0)


async def test_listen_stream_hears_another_clients_lead(live: LiveServer, keys: dict[str, str]) -> None:
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=[LEADS]) as sub:
            assert sub.honored.resource_subscriptions == [LEADS]
            await _create_lead(live, keys["crm"], 2)
            with anyio.fail_after(10):
                async for event in sub:
                    assert str(event.uri) == LEADS  # type: ignore[union-attr]
                    break


async def _watch(client: Any, mode: str, uri: str) -> None:
    if mode == "legacy":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(uri)
        return
    async with client.listen(resource_subscriptions=[uri]):
        pass


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_watching_another_dealership_is_refused(live: LiveServer, keys: dict[str, str], mode: str) -> None:
    other = f"automotive://dealers/{BAY_SJ}/leads"
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, mode) as client:
        with pytest.raises(MCPError) as caught:
            await _watch(client, mode, other)
    assert caught.value.code == -32003
    assert caught.value.error.data["code"] == "auth.tenancy_denied"


async def test_events_list_replays_the_change_feed(live: LiveServer, keys: dict[str, str]) -> None:
    lead_id = await _create_lead(live, keys["crm"], 3)
    async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, "auto") as client:
        cursor = None
        events: list[dict[str, Any]] = []
        for _ in range(100):
            args: dict[str, Any] = {"dealership_id": TOYOTA, "resource_type": "lead", "limit": 100}
            if cursor:
                args["cursor"] = cursor
            page = (await client.call_tool("events.list", args)).structured_content
            events.extend(page["items"])
            cursor = page.get("next_cursor")
            if cursor is None:
                break
    created = [e for e in events if e["resource_id"] == lead_id]
    assert created
    assert created[0]["change_type"] == "created"
    assert created[0]["event_id"]


@pytest.mark.redis
async def test_a_subscriber_on_another_replica_is_notified_through_redis(
    mcp_template: Template, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    db = mcp_template.copy_to(tmp_path)

    def replica(name: str) -> LiveServer:
        return LiveServer(
            lambda base: settings_for(
                db, public_base_url=base, redis_url=redis_url, redis_prefix=redis_prefix, instance_name=name
            )
        )

    a, b = replica("replica-a"), replica("replica-b")
    await a.start()
    await b.start()
    try:
        async with (
            http_client(mcp_template.keys["crm"]) as hc,
            mcp_client(b.url, hc, "auto") as client,
            client.listen(resource_subscriptions=[LEADS]) as sub,
        ):
            await _create_lead(a, mcp_template.keys["crm"], 4)
            with anyio.fail_after(10):
                async for event in sub:
                    assert str(event.uri) == LEADS  # type: ignore[union-attr]
                    break
    finally:
        a.stop()
        b.stop()
