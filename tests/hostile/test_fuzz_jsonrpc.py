"""Property-based fuzzing of the JSON-RPC front doors: MCP Streamable HTTP (``POST /mcp``) and AAP (A2A JSON-RPC).

Hostile messages (arbitrary JSON, wrong member types, unknown methods, out-of-range ids, invalid UTF-8, deep
nesting, oversized bodies) get a JSON-RPC error or a 4xx: never a 5xx, never a stack trace, never an echoed
e-mail address or phone number.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.support import TOYOTA, Rig

from .support import JSON_VALUES, PII, assert_clean_refusal, error_code_of, fuzz_settings, pii_in

MCP_PATH = "/mcp"
A2A_PATH = f"/dealers/{TOYOTA}/a2a/jsonrpc"
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
    # The MCP transport checks Host against its allow-list; the test client's default host is not on it.
    "Host": "localhost",
}
A2A_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
METHODS = st.one_of(
    st.sampled_from(
        [
            "initialize",
            "tools/list",
            "tools/call",
            "resources/read",
            "resources/templates/list",
            "server/discover",
            "SendMessage",
            "GetTask",
            "ListTasks",
            "CancelTask",
        ]
    ),
    st.text(max_size=40),
)
IDS = st.one_of(
    st.none(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.text(max_size=40),
    st.floats(allow_nan=False, allow_infinity=False),
)


def _message(method: Any, params: Any, msg_id: Any, version: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": version, "method": method, "id": msg_id}
    if params is not None:
        message["params"] = params
    return message


MESSAGES = st.builds(
    _message,
    method=METHODS,
    params=st.one_of(st.none(), JSON_VALUES, st.dictionaries(st.text(max_size=16), JSON_VALUES, max_size=5)),
    msg_id=IDS,
    version=st.one_of(st.just("2.0"), JSON_VALUES),
)


async def _require_jsonrpc(rig: Rig, path: str, headers: dict[str, str], what: str) -> None:
    """Skip (with the reason shown) until the surface answers JSON-RPC at ``path``."""
    probe = await rig.client.post(path, content=b"{", headers={**headers, "Authorization": f"Bearer {rig.keys['crm']}"})
    if probe.status_code in (404, 405) or "json" not in probe.headers.get("content-type", ""):
        pytest.skip(f"{what} does not answer JSON-RPC at {path} yet ({probe.status_code})")


def _assert_jsonrpc_refusal_or_answer(response: Any, sent: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code >= 400:
        assert_clean_refusal(response, echoed=pii_in(sent))
        return
    # 2xx: a JSON-RPC result or error, or an event stream carrying one; nothing personal echoed in an error.
    text = response.text
    assert "Traceback" not in text
    if '"error"' in text:
        # JSON-RPC echoes the request id by design (it is the caller's own correlation token).
        echoed_id = sent.get("id") if isinstance(sent, dict) else None
        for value in pii_in(sent):
            if value != echoed_id:
                assert value not in text, ("PII echoed", value)


@pytest.mark.parametrize(("path", "headers", "what"), [(MCP_PATH, MCP_HEADERS, "MCP"), (A2A_PATH, A2A_HEADERS, "AAP")])
async def test_a_malformed_jsonrpc_body_gets_a_jsonrpc_error_with_a_4xx(
    rig: Rig, path: str, headers: dict[str, str], what: str
) -> None:
    await _require_jsonrpc(rig, path, headers, what)
    auth = {**headers, "Authorization": f"Bearer {rig.keys['crm']}"}
    for raw in (b"\xff\xfe{}", b"[" * 100 + b"]" * 100, b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": '):
        response = await rig.client.post(path, content=raw, headers=auth)
        body = response.json()
        # JSON-RPC over HTTP may answer a parse error with 200 (the A2A binding does); never with a 5xx.
        assert 400 <= response.status_code < 500 or response.status_code == 200, (what, raw[:20], response.status_code)
        assert body.get("jsonrpc") == "2.0"
        assert isinstance(body["error"]["code"], int)
        assert error_code_of(body)


async def test_an_oversized_jsonrpc_body_is_413_with_a_jsonrpc_error(rig: Rig) -> None:
    for path, headers in ((MCP_PATH, MCP_HEADERS), (A2A_PATH, A2A_HEADERS)):
        big = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": "' + b"y" * 1_100_000 + b'"}}'
        response = await rig.client.post(path, content=big, headers=headers)
        assert response.status_code == 413
        assert response.json()["error"]["code"] == -32600


@fuzz_settings()
@given(message=MESSAGES)
async def test_any_mcp_message_is_answered_without_a_server_error(rig: Rig, message: dict[str, Any]) -> None:
    await _require_jsonrpc(rig, MCP_PATH, MCP_HEADERS, "MCP")
    for era_headers in (MCP_HEADERS, {**MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28"}):
        headers = {**era_headers, "Authorization": f"Bearer {rig.keys['crm']}"}
        response = await rig.client.post(MCP_PATH, json=message, headers=headers)
        _assert_jsonrpc_refusal_or_answer(response, message)


@fuzz_settings()
@given(arguments=st.dictionaries(st.text(max_size=16), JSON_VALUES, max_size=6), tool=st.text(max_size=30), pii=PII)
async def test_any_mcp_tool_arguments_are_answered_without_a_server_error_or_echo(
    rig: Rig, arguments: dict[str, Any], tool: str, pii: str
) -> None:
    await _require_jsonrpc(rig, MCP_PATH, MCP_HEADERS, "MCP")
    params = {
        "name": tool or "inventory.search",
        "arguments": {**arguments, "email": pii},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28", "Authorization": f"Bearer {rig.keys['crm']}"}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = await rig.client.post(MCP_PATH, json=message, headers=headers)
    _assert_jsonrpc_refusal_or_answer(response, message)


@fuzz_settings()
@given(message=MESSAGES)
async def test_any_aap_message_is_answered_without_a_server_error(rig: Rig, message: dict[str, Any]) -> None:
    await _require_jsonrpc(rig, A2A_PATH, A2A_HEADERS, "AAP")
    response = await rig.client.post(A2A_PATH, json=message, headers=A2A_HEADERS)
    _assert_jsonrpc_refusal_or_answer(response, message)


@fuzz_settings()
@given(data=st.dictionaries(st.text(max_size=16), JSON_VALUES, max_size=6), skill=st.text(max_size=30), pii=PII)
async def test_any_aap_skill_payload_is_answered_without_a_server_error_or_echo(
    rig: Rig, data: dict[str, Any], skill: str, pii: str
) -> None:
    await _require_jsonrpc(rig, A2A_PATH, A2A_HEADERS, "AAP")
    part = {
        "data": {"type": skill or "inventory.search.request", **data, "customer": {"email": pii}},
        "mediaType": "application/vnd.autoagent.inventory-search-request+json",
    }
    message = {
        "jsonrpc": "2.0",
        "id": "fuzz-1",
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [part]}},
    }
    response = await rig.client.post(A2A_PATH, json=message, headers=A2A_HEADERS)
    _assert_jsonrpc_refusal_or_answer(response, message)
