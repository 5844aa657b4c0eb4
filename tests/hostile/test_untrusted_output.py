"""Untrusted output: a hostile upstream's injection text is marked and flagged on every door, never rewritten,
and a session that has read it loses the side-effect tools its company's policy names.

The hostile server (``hostile_upstream.py``) answers ``lookup_owner`` with an instruction addressed to the model,
zero-width and bidi characters, a ``<script>`` tag and a markdown image that would leak data.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import httpx2
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import new_data_part
from a2a.types import Message, Role, SendMessageRequest
from google.protobuf.json_format import MessageToDict
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from forecourt.domain.protections import AfterUntrusted, Protections
from forecourt.domain.tenancy import Policy
from gateway.support import MOTOR, TOYOTA, Template, start_rig, stop_rig
from hostile.hostile_upstream import INJECTION
from hostile.protect_support import HostileUpstream, Live, mcp_client, prepare_db, register_hostile

FLAGS = {"instruction", "hidden_unicode", "markup"}
META = "forecourt/provenance"


@pytest.fixture
async def hostile() -> AsyncIterator[HostileUpstream]:
    server = HostileUpstream()
    await server.start()
    try:
        yield server
    finally:
        server.stop()


async def _live(template: Template, tmp_path: Path, *policies: Policy) -> Live:
    db = template.copy_to(tmp_path)
    await prepare_db(db, *policies)
    live = Live(db)
    await live.start()
    return live


def _flags(mark: dict[str, Any]) -> set[str]:
    return {f["kind"] for f in mark["flags"]}


async def _a2a(live: Live, key: str, action: str, payload: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        config = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"])
        client = await ClientFactory(config).create_from_url(live.base_url + "/agent")
        message = Message(
            message_id=uuid4().hex,
            role=Role.ROLE_USER,
            parts=[new_data_part({"action": action, "payload": payload}, media_type="application/json")],
        )
        try:
            events = [e async for e in client.send_message(SendMessageRequest(message=message))]
        finally:
            await client.close()
    task = [e.task for e in events if e.HasField("task")][-1]
    return MessageToDict(task)


async def test_an_injected_upstream_result_is_marked_and_flagged_on_every_door_and_never_rewritten(
    hostile_template: Template, tmp_path: Path, hostile: HostileUpstream
) -> None:
    live = await _live(hostile_template, tmp_path)
    key = hostile_template.keys["crm"]
    try:
        await register_hostile(live, hostile_template.keys["admin"], hostile)
        hc, legacy = mcp_client(f"{live.base_url}/mcp", key)
        async with hc, legacy:
            old_era = await legacy.call_tool("evil.lookup_owner", {"vin": "1HGCM82633A004352"})
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as hc2:
            modern = Client(streamable_http_client(f"{live.base_url}/mcp", http_client=hc2), mode="2026-07-28")  # type: ignore[arg-type]
            async with modern:
                new_era = await modern.call_tool("evil.lookup_owner", {"vin": "1HGCM82633A004352"})
        rest = await live.call("evil.lookup_owner", key, {"vin": "1HGCM82633A004352"})
        task = await _a2a(live, key, "evil.lookup_owner", {"vin": "1HGCM82633A004352"})
    finally:
        live.stop()
    records = [r for r in await live.audit(MOTOR) if r.action == "evil.lookup_owner"]

    for result in (old_era, new_era):
        mark = (result.meta or {})[META]
        assert mark["untrusted"] is True
        assert mark["sources"] == ["upstream_tool_result"]
        assert _flags(mark) == FLAGS
        block = result.content[0]
        assert block.meta == {"forecourt/untrusted": {"id": mark["delimiter"], "sources": ["upstream_tool_result"]}}
        assert block.text == INJECTION  # delimited as data, not rewritten
    rest_mark = rest.json()["result"]["metadata"]["provenance"]
    assert _flags(rest_mark) == FLAGS
    assert rest.json()["result"]["output"]["content"][0]["text"] == INJECTION
    artifact = task["artifacts"][-1]
    assert _flags(artifact["metadata"][META]) == FLAGS
    assert len(records) == 4
    assert all(_flags(r.args_redacted["_provenance"]) == FLAGS for r in records)
    assert all(INJECTION not in json.dumps(r.args_redacted) for r in records)


async def test_a_session_that_read_untrusted_output_is_refused_the_tools_the_policy_names_and_others_are_not(
    hostile_template: Template, tmp_path: Path, hostile: HostileUpstream
) -> None:
    policy = Policy(
        id="per-turn",
        company_id=MOTOR,
        protections=Protections(after_untrusted=AfterUntrusted(refuse=("evil.send_email",))),
    )
    live = await _live(hostile_template, tmp_path, policy)
    key = hostile_template.keys["crm"]
    email = {"to": "buyer@example.com", "body": "Your appointment is confirmed."}
    try:
        await register_hostile(live, hostile_template.keys["admin"], hostile)
        before = await live.call("evil.send_email", key, email, session="s-1")
        await live.call("evil.lookup_owner", key, {"vin": "1HGCM82633A004352"}, session="s-1")
        after = await live.call("evil.send_email", key, email, session="s-1")
        elsewhere = await live.call("evil.send_email", key, email, session="s-2")
        hc, client = mcp_client(f"{live.base_url}/mcp", key)
        async with hc, client:
            await client.call_tool("evil.lookup_owner", {"vin": "1HGCM82633A004352"})
            refused = await client.call_tool("evil.send_email", email)
    finally:
        live.stop()
    assert before.status_code == 200
    assert after.status_code == 403
    assert after.json()["status"]["error"]["code"] == "policy.session_restricted"
    assert elsewhere.status_code == 200
    assert refused.is_error
    assert json.loads(refused.content[0].text)["error"]["code"] == "policy.session_restricted"


@pytest.mark.redis
async def test_a_session_tainted_on_one_replica_needs_approval_on_another(
    hostile_template: Template, tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    policy = Policy(
        id="per-turn",
        company_id=MOTOR,
        protections=Protections(after_untrusted=AfterUntrusted(require_approval=("leads.update",))),
    )
    db = hostile_template.copy_to(tmp_path)
    await prepare_db(db, policy)
    shared = {"redis_url": redis_url, "redis_prefix": redis_prefix}
    one = await start_rig(hostile_template, tmp_path, db=db, instance_name="replica-1", **shared)
    two = await start_rig(hostile_template, tmp_path, db=db, instance_name="replica-2", **shared)
    try:
        listed = await one.call("leads.list", {"dealership_id": TOYOTA, "limit": 1})
        lead_id = listed.json()["result"]["output"]["items"][0]["id"]
        update = {"dealership_id": TOYOTA, "lead_id": lead_id, "status": "contacted"}
        held = await two.call("leads.update", update)
        other_session = await two.client.post(
            "/mcp/leads.update",
            json={"id": "r", "caller": {"sessionId": "fresh"}, "payload": update},
            headers={"Authorization": f"Bearer {two.keys['crm']}"},
        )
    finally:
        await stop_rig(one)
        await stop_rig(two)
    assert listed.json()["result"]["metadata"]["provenance"]["sources"] == ["lead_message", "customer_note"]
    assert held.status_code == 409
    assert held.json()["status"]["error"]["code"] == "approval.pending"
    assert other_session.status_code == 200
