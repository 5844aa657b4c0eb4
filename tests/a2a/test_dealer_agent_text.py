"""A dealer agent answers a plain A2A v1.0 client that sends text, with the real a2a-sdk client over a socket.

A new text-only message is a free-text inventory search answered as a completed Task: the AAP search response
(valid against the AAP v0.1 schema) and a text summary as its artifact, the skills and DataPart shapes the
agent takes as its status message, and the task readable back with ``GetTask``.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.helpers import new_text_part
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, StreamResponse, TaskState
from a2a.utils.errors import ContentTypeNotSupportedError
from google.protobuf.json_format import MessageToDict

from aap.support import TOYOTA, LiveServer, build_template, settings_for
from forecourt.bootstrap import create_app
from forecourt.domain.aap_spec import SKILLS, SKILLS_BY_ID, errors, normalise_numbers

SEARCH = SKILLS_BY_ID["inventory.search"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    """The demo app on loopback for this module, and its API keys."""
    directory = tmp_path_factory.mktemp("dealer-text")
    template = directory / "template.db"
    keys = asyncio.run(build_template(template))
    db = directory / "forecourt.db"
    shutil.copyfile(template, db)
    live = LiveServer(create_app(settings_for(Path(db)))).start()
    try:
        yield live, keys
    finally:
        live.stop()


async def _exchange(
    base: str, binding: str, text: str, *, streaming: bool, key: str
) -> tuple[list[StreamResponse], Any]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding])
        client = await ClientFactory(config).create_from_url(base)
        request = SendMessageRequest(
            message=Message(message_id=str(uuid4()), role=Role.ROLE_USER, parts=[new_text_part(text)])
        )
        try:
            events = [event async for event in client.send_message(request)]
            first = events[0].task if events[0].HasField("task") else None
            fetched = await client.get_task(GetTaskRequest(id=first.id)) if first is not None else None
        finally:
            await client.close()
    return events, fetched


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_text_message_is_a_free_text_inventory_search_answered_as_a_completed_task(
    server: tuple[LiveServer, dict[str, str]], binding: str, streaming: bool
) -> None:
    live, keys = server
    base = f"{live.url}/dealers/{TOYOTA}"
    events, fetched = await _exchange(base, binding, "Toyota", streaming=streaming, key=keys["shopper"])
    assert events[0].HasField("task"), events[0]
    task = events[-1].task if events[-1].HasField("task") else events[0].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.id
    assert task.context_id
    answer, summary = task.artifacts[0].parts
    assert answer.media_type == SEARCH.response_media_type
    payload = normalise_numbers(MessageToDict(answer.data))
    assert errors(SEARCH.response_schema, payload) == []
    assert payload["data"]["total"] > 0  # the demo inventory is Toyota's
    assert summary.text.startswith(f"{payload['data']['total']} vehicle")
    guide_text, guide = task.status.message.parts
    assert "free-text inventory search" in guide_text.text
    shapes = MessageToDict(guide.data)["skills"]
    assert {s["id"] for s in shapes} == {s.id for s in SKILLS}
    assert all(s["requestMediaType"].startswith("application/vnd.autoagent.") for s in shapes)
    assert fetched is not None
    assert fetched.id == task.id
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert [p.text for m in fetched.history for p in m.parts] == ["Toyota"]


async def test_an_aap_data_part_still_answers_one_message(server: tuple[LiveServer, dict[str, str]]) -> None:
    """AAP v0.1 is unchanged: a skill's DataPart is answered with one Message, no task."""
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{server[0].url}/dealers/{TOYOTA}/a2a/message:send",
            json={
                "message": {
                    "messageId": str(uuid4()),
                    "role": "ROLE_USER",
                    "parts": [{"data": {"type": SEARCH.request_type}, "mediaType": SEARCH.request_media_type}],
                }
            },
            headers={"A2A-Version": "1.0"},
        )
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"message"}


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_file_part_is_content_type_not_supported_with_the_aap_error_kept(
    server: tuple[LiveServer, dict[str, str]], binding: str
) -> None:
    seen: list[httpx.Response] = []

    async def hook(response: httpx.Response) -> None:
        if response.request.method == "POST":
            await response.aread()
            seen.append(response)

    async with httpx.AsyncClient(event_hooks={"response": [hook]}) as http:
        config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=[binding])
        client = await ClientFactory(config).create_from_url(f"{server[0].url}/dealers/{TOYOTA}")
        part = Part(raw=b"tck", media_type="application/x-unsupported")
        request = SendMessageRequest(message=Message(message_id=str(uuid4()), role=Role.ROLE_USER, parts=[part]))
        try:
            # HTTP+JSON: the body is AAP's error, which the SDK client reads as an HTTP error (docs/a2a.md)
            with pytest.raises(ContentTypeNotSupportedError if binding == "JSONRPC" else A2AClientError):
                _ = [event async for event in client.send_message(request)]
        finally:
            await client.close()
    body = seen[-1].json()
    if binding == "JSONRPC":
        assert body["error"]["code"] == -32005
        aap = body["error"]["data"]
    else:
        assert seen[-1].status_code == 415
        aap = body
    assert aap["type"] == "aap.error"
    assert aap["code"] == "UNSUPPORTED_SKILL"
    assert errors("error.schema.json", aap) == []


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_anonymous_text_search_leaves_no_task_in_the_dealer_agents_memory(
    server: tuple[LiveServer, dict[str, str]], streaming: bool
) -> None:
    """An anonymous caller can never read its task again (owners.py), so the store does not keep it."""
    live = server[0]
    store: Any = live.server.config.app.state.services.aap.task_store
    async with httpx.AsyncClient() as http:
        config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=["JSONRPC"])
        client = await ClientFactory(config).create_from_url(f"{live.url}/dealers/{TOYOTA}")
        request = SendMessageRequest(
            message=Message(message_id=str(uuid4()), role=Role.ROLE_USER, parts=[new_text_part("Toyota")])
        )
        try:
            events = [event async for event in client.send_message(request)]
        finally:
            await client.close()
    assert events[0].task.status.state == TaskState.TASK_STATE_COMPLETED
    anonymous = [owner for owner in store.inner._impl.tasks if owner.startswith("anonymous:")]
    assert anonymous == []
