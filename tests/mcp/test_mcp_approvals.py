"""A tool call a company policy holds for a person's approval, over the official MCP client in both eras."""

from __future__ import annotations

import pytest
from mcp_support import MOTOR, TOYOTA, LiveServer, error_of, http_client, mcp_client

ERAS = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]
RULE = {"action": "leads.update", "field": "status", "op": "eq", "value": "lost"}


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_a_held_tool_call_runs_on_approval_and_its_answer_is_read_with_approvals_get(
    live: LiveServer, keys: dict[str, str], mode: str, version: str
) -> None:
    async with http_client(keys["all"]) as admin:
        policy = f"{live.url.rsplit('/mcp', 1)[0]}/admin/v1/companies/{MOTOR}/policies/{MOTOR}-default"
        assert (await admin.put(policy, json={"require_approval": [RULE]})).status_code == 200
        async with http_client(keys["crm"]) as hc, mcp_client(live.url, hc, mode) as client:
            assert client.protocol_version == version
            listed = await client.call_tool("leads.list", {"dealership_id": TOYOTA, "limit": 5})
            assert listed.structured_content is not None
            lead = next(i for i in listed.structured_content["items"] if i["status"] in ("new", "contacted"))
            update = {"dealership_id": TOYOTA, "lead_id": lead["id"], "status": "lost"}
            held = await client.call_tool("leads.update", update)
            assert held.is_error
            error = error_of(held)
            assert error["code"] == "approval.pending"
            assert error["retryable"] is False
            approval_id = error["details"]["approval_id"]
            assert "approvals.get" in held.content[0].text
            decide = {"company_id": MOTOR, "approval_id": approval_id, "decision": "approve"}
            base = live.url.rsplit("/mcp", 1)[0]
            decided = await admin.post(f"{base}/mcp/approvals.decide", json={"payload": decide})
            assert decided.json()["result"]["output"]["outcome"] == "ok"
            answer = await client.call_tool("approvals.get", {"approval_id": approval_id})
            fetched = await client.call_tool("leads.get", {"dealership_id": TOYOTA, "lead_id": lead["id"]})
    assert not answer.is_error
    assert answer.structured_content is not None
    assert answer.structured_content["status"] == "used"
    assert answer.structured_content["result"]["output"]["status"] == "lost"
    assert fetched.structured_content is not None
    assert fetched.structured_content["status"] == "lost"
