"""The real a2a-sdk client against the served app: card discovery and every skill on both bindings."""

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
from a2a.helpers import new_data_part
from a2a.types import Message, Role, SendMessageConfiguration, SendMessageRequest
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict

from aap.support import TOYOTA, LiveServer, build_template, fixture, settings_for
from forecourt.bootstrap import create_app
from forecourt.domain.aap_spec import SKILLS_BY_ID, errors, normalise_numbers

EXAMPLES = [
    ("dealer.information", "dealer-information-request.example.json"),
    ("inventory.facets", "inventory-facets-request.example.json"),
    ("inventory.search", "inventory-search-request.example.json"),
    ("inventory.vehicle", "vehicle-detail-request.example.json"),
    ("lead.submit", "lead-submit-request.example.json"),
    ("lead.submit", "lead-submit-request.minimal.example.json"),
    ("lead.submit", "lead-submit-request.vehicle-only.example.json"),
    ("lead.submit", "lead-submit-request.appointment.example.json"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The demo app on loopback for this module."""
    directory = tmp_path_factory.mktemp("a2a-sdk")
    template = directory / "template.db"
    asyncio.run(build_template(template))
    db = directory / "forecourt.db"
    shutil.copyfile(template, db)
    live = LiveServer(create_app(settings_for(Path(db)))).start()
    try:
        yield live
    finally:
        live.stop()


async def _send(base: str, binding: str, skill_id: str, data: dict[str, Any], hook: Any = None) -> dict[str, Any]:
    skill = SKILLS_BY_ID[skill_id]
    async with httpx.AsyncClient(event_hooks={"response": [hook]} if hook else {}) as http:
        config = ClientConfig(
            httpx_client=http,
            streaming=False,
            supported_protocol_bindings=[binding],
            accepted_output_modes=[skill.response_media_type],
        )
        client = await ClientFactory(config).create_from_url(base)
        request = SendMessageRequest(
            message=Message(
                message_id=str(uuid4()),
                role=Role.ROLE_USER,
                parts=[new_data_part(data, media_type=skill.request_media_type)],
            ),
            configuration=SendMessageConfiguration(accepted_output_modes=[skill.response_media_type]),
        )
        try:
            replies = [event async for event in client.send_message(request)]
        finally:
            await client.close()
    assert len(replies) == 1
    assert replies[0].HasField("message")
    part = replies[0].message.parts[0]
    assert part.media_type == skill.response_media_type
    return dict(normalise_numbers(MessageToDict(part.data)))


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.parametrize(("skill_id", "example"), EXAMPLES)
async def test_the_python_a2a_client_calls_every_skill_example_on_both_bindings(
    server: LiveServer, binding: str, skill_id: str, example: str
) -> None:
    base = f"{server.url}/dealers/{TOYOTA}"
    data = fixture(example)
    if skill_id == "inventory.vehicle":
        found = await _send(base, binding, "inventory.search", {"type": "inventory.search.request"})
        data["vin"] = found["data"]["vehicles"][0]["vin"]
    payload = await _send(base, binding, skill_id, data)
    assert errors(SKILLS_BY_ID[skill_id].response_schema, payload) == []


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_python_a2a_client_surfaces_aap_errors(server: LiveServer, binding: str) -> None:
    seen: list[dict[str, Any]] = []

    async def hook(response: httpx.Response) -> None:
        if response.request.method == "POST":
            await response.aread()
            body = response.json()
            seen.append(body["error"]["data"] if "jsonrpc" in body and "error" in body else body)

    with pytest.raises(A2AError):
        await _send(
            f"{server.url}/dealers/{TOYOTA}",
            binding,
            "inventory.search",
            {"type": "inventory.search.request", "bogus": 1},
            hook,
        )
    assert seen[-1]["type"] == "aap.error"
    assert seen[-1]["code"] == "SCHEMA_VALIDATION_FAILED"


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_python_a2a_client_streams_a_skill_reply_as_one_message_event(
    server: LiveServer, binding: str
) -> None:
    skill = SKILLS_BY_ID["inventory.search"]
    async with httpx.AsyncClient() as http:
        config = ClientConfig(
            httpx_client=http,
            streaming=True,
            supported_protocol_bindings=[binding],
            accepted_output_modes=[skill.response_media_type],
        )
        client = await ClientFactory(config).create_from_url(f"{server.url}/dealers/{TOYOTA}")
        assert client._card.capabilities.streaming  # the card says it, and it is so
        request = SendMessageRequest(
            message=Message(
                message_id=str(uuid4()),
                role=Role.ROLE_USER,
                parts=[new_data_part({"type": "inventory.search.request"}, media_type=skill.request_media_type)],
            )
        )
        try:
            events = [event async for event in client.send_message(request)]
        finally:
            await client.close()
    assert len(events) == 1
    payload = normalise_numbers(MessageToDict(events[0].message.parts[0].data))
    assert errors(skill.response_schema, payload) == []
