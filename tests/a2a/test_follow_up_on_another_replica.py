"""A follow-up message naming only ``taskId`` continues a workflow task on whichever replica it lands: two app
instances on one PostgreSQL database and one Redis, both directions, nothing left ``FAILED``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import httpx
import pytest

from aap.support import LiveServer
from forecourt.bootstrap import create_app
from forecourt.settings import Settings
from replicas.support import CURSOR_SECRET, PEPPER, TOYOTA, prepare_database

pytestmark = [pytest.mark.postgres, pytest.mark.redis]
RPC = "/agent/a2a/jsonrpc"


def _settings(database_url: str, redis_url: str, redis_prefix: str, name: str) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=redis_url,
        redis_prefix=redis_prefix,
        api_key_pepper=PEPPER,
        cursor_secret=CURSOR_SECRET,
        instance_name=name,
        allow_private_targets=True,
        audit_flush_interval_s=0.05,
        log_json=False,
    )


@pytest.fixture
async def replicas(
    postgres_url: str, redis_url: str, redis_prefix: str
) -> AsyncIterator[tuple[list[LiveServer], dict[str, str]]]:
    keys = await prepare_database(postgres_url)
    servers = [
        await asyncio.to_thread(
            lambda n=name: LiveServer(create_app(_settings(postgres_url, redis_url, redis_prefix, n))).start()
        )
        for name in ("replica-a", "replica-b")
    ]
    try:
        yield servers, keys
    finally:
        for server in servers:
            await asyncio.to_thread(server.stop)


async def _rpc(http: httpx.AsyncClient, server: LiveServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid4().hex, "method": method, "params": params}
    answer: dict[str, Any] = (await http.post(server.url + RPC, json=body)).json()
    return answer


def _message(data: dict[str, Any], task_id: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": uuid4().hex, "role": "ROLE_USER", "parts": [{"data": data}]}
    if task_id:
        message["taskId"] = task_id  # the task alone: no contextId
    return {"message": message}


async def _new_leads(http: httpx.AsyncClient, server: LiveServer, n: int) -> list[str]:
    body = {"payload": {"dealership_id": TOYOTA, "status": "new", "limit": n}}
    items = (await http.post(server.url + "/mcp/leads.list", json=body)).json()["result"]["output"]["items"]
    assert len(items) == n
    return [str(item["id"]) for item in items]


async def test_a_follow_up_naming_only_the_task_continues_it_on_the_other_replica_both_ways(
    replicas: tuple[list[LiveServer], dict[str, str]],
) -> None:
    (a, b), keys = replicas
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {keys['crm']}", "A2A-Version": "1.0"}, timeout=60
    ) as http:
        leads = await _new_leads(http, a, 2)
        for (first, second), lead in zip(((a, b), (b, a)), leads, strict=True):
            payload = {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead}}
            started = await _rpc(http, first, "SendMessage", _message({"action": "workflow.run", "payload": payload}))
            task = started["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"

            answered = await _rpc(http, second, "SendMessage", _message({"data": {"outcome": "contacted"}}, task["id"]))
            assert "error" not in answered, answered
            done = answered["result"]["task"]
            assert done["contextId"] == task["contextId"]
            assert done["status"]["state"] == "TASK_STATE_COMPLETED"
            for server in (first, second):
                back = await _rpc(http, server, "GetTask", {"id": task["id"]})
                assert back["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
