"""A2A (AAP) through the round-robin proxy: the a2a-sdk client's messages are answered by both replicas."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import asyncpg
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import new_data_part
from a2a.types import Message, Role, SendMessageConfiguration, SendMessageRequest
from google.protobuf.json_format import MessageToDict

from aap.support import fixture
from forecourt.domain.aap_spec import SKILLS_BY_ID, normalise_numbers
from replicas.support import TOYOTA, Cluster, poll

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _request(skill_id: str, data: dict[str, Any]) -> SendMessageRequest:
    skill = SKILLS_BY_ID[skill_id]
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid4()),
            role=Role.ROLE_USER,
            parts=[new_data_part(data, media_type=skill.request_media_type)],
        ),
        configuration=SendMessageConfiguration(accepted_output_modes=[skill.response_media_type]),
    )


async def _a2a_processors(database_url: str) -> dict[str, int]:
    conn = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        rows = await conn.fetch(
            "SELECT processed_by, count(*) AS n FROM audit_records WHERE surface = 'a2a' GROUP BY processed_by"
        )
    finally:
        await conn.close()
    return {r["processed_by"]: int(r["n"]) for r in rows}


async def test_send_message_search_and_lead_submit_are_served_by_both_replicas(cluster: Cluster) -> None:
    replies: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=30) as http:
        config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"])
        client = await ClientFactory(config).create_from_url(f"{cluster.url}/dealers/{TOYOTA}")
        try:
            for skill_id, data in [
                ("inventory.search", {"type": "inventory.search.request"}),
                ("lead.submit", fixture("lead-submit-request.minimal.example.json")),
                ("inventory.search", {"type": "inventory.search.request"}),
            ]:
                events = [event async for event in client.send_message(_request(skill_id, data))]
                assert len(events) == 1
                assert events[0].HasField("message")
                part = events[0].message.parts[0]
                assert part.media_type == SKILLS_BY_ID[skill_id].response_media_type
                replies.append(dict(normalise_numbers(MessageToDict(part.data))))
        finally:
            await client.close()
    assert [r["type"] for r in replies] == [
        "inventory.search.response",
        "lead.submit.response",
        "inventory.search.response",
    ]
    assert replies[0]["data"]["vehicles"]

    async def both_audited() -> bool:
        return set(await _a2a_processors(cluster.database_url)) == {"replica-a", "replica-b"}

    await poll(both_audited, 10.0, "audit records of both replicas")
