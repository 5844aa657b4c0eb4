"""Normal A2A traffic logs nothing at ERROR: both agents, both bindings, plain and streamed, on a live server."""

from __future__ import annotations

import asyncio
import gc
import logging
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import new_data_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
)
from a2a.utils.errors import A2AError

from aap.support import TOYOTA, LiveServer, build_template, message, settings_for
from forecourt.bootstrap import create_app


class Errors(logging.Handler):
    """Keeps every record at ERROR or above, from any logger and any thread."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _gateway_message(data: dict[str, Any], task_id: str = "") -> Message:
    return Message(
        message_id=uuid4().hex,
        role=Role.ROLE_USER,
        parts=[new_data_part(data, media_type="application/json")],
        task_id=task_id,
    )


def _task_id(events: list[Any]) -> str:
    for event in events:
        if event.HasField("task"):
            return str(event.task.id)
        if event.HasField("status_update"):
            return str(event.status_update.task_id)
    raise AssertionError(events)


async def _traffic(server: LiveServer, key: str) -> None:
    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(headers=auth, timeout=60) as http:
        lead = (
            await http.post(
                server.url + "/mcp/leads.list",
                json={"payload": {"dealership_id": TOYOTA, "status": "new", "limit": 1}},
            )
        ).json()["result"]["output"]["items"][0]["id"]
        workflow = {
            "action": "workflow.run",
            "payload": {"dealership_id": TOYOTA, "workflow_id": "new_lead_follow_up", "inputs": {"lead_id": lead}},
        }
        for binding in ("JSONRPC", "HTTP+JSON"):
            for streaming in (False, True):
                config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding])
                gateway = await ClientFactory(config).create_from_url(server.url + "/agent")
                dealer = await ClientFactory(config).create_from_url(f"{server.url}/dealers/{TOYOTA}/")
                try:
                    done = [
                        e
                        async for e in gateway.send_message(
                            SendMessageRequest(
                                message=_gateway_message(
                                    {"action": "inventory.facets", "payload": {"dealership_id": TOYOTA}}
                                )
                            )
                        )
                    ]
                    assert done
                    # A message to a task that has ended is refused (A2A: a terminal task takes no more messages).
                    ended = _gateway_message({"data": {}}, task_id=_task_id(done))
                    with pytest.raises(A2AError):
                        _ = [e async for e in gateway.send_message(SendMessageRequest(message=ended))]
                    waiting = [
                        e async for e in gateway.send_message(SendMessageRequest(message=_gateway_message(workflow)))
                    ]
                    task_id = _task_id(waiting)
                    await gateway.get_task(GetTaskRequest(id=task_id))
                    await gateway.list_tasks(ListTasksRequest())
                    answered = _gateway_message({"data": {"outcome": "contacted"}}, task_id=task_id)
                    assert [e async for e in gateway.send_message(SendMessageRequest(message=answered))]
                    again = [
                        e async for e in gateway.send_message(SendMessageRequest(message=_gateway_message(workflow)))
                    ]
                    other = _task_id(again)
                    await gateway.cancel_task(CancelTaskRequest(id=other))
                    search = message("inventory.search", {"type": "inventory.search.request"})
                    from google.protobuf.json_format import ParseDict

                    aap = ParseDict(search, Message())
                    assert [e async for e in dealer.send_message(SendMessageRequest(message=aap))]
                    # A refused skill call (an AAP error, on the stream too) is normal traffic as well.
                    bad = ParseDict(
                        message("inventory.search", {"type": "inventory.search.request", "x": 1}), Message()
                    )
                    with pytest.raises(A2AError):
                        _ = [e async for e in dealer.send_message(SendMessageRequest(message=bad))]
                    # So is a subscriber that leaves before the task ends.
                    if streaming:
                        third = _task_id(
                            [
                                e
                                async for e in gateway.send_message(
                                    SendMessageRequest(message=_gateway_message(workflow))
                                )
                            ]
                        )
                        async for _event in gateway.subscribe(SubscribeToTaskRequest(id=third)):
                            break
                finally:
                    await gateway.close()
                    await dealer.close()


def test_normal_a2a_traffic_logs_no_error_line(tmp_path: Path) -> None:
    db = tmp_path / "forecourt.db"
    keys = asyncio.run(build_template(db))
    server = LiveServer(create_app(settings_for(db))).start()
    errors = Errors()
    root = logging.getLogger()
    root.addHandler(errors)  # after the app configured logging (it replaces the root's handlers once)
    try:
        try:
            asyncio.run(_traffic(server, keys["crm"]))
        finally:
            server.stop()
        gc.collect()  # a pending task dropped on the floor is reported when it is collected
    finally:
        root.removeHandler(errors)
    lines = [f"{r.name}: {r.getMessage()}" for r in errors.records]
    assert lines == []
