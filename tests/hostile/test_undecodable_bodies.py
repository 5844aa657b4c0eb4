"""Probe: undecodable bodies on every door (issue 11, item 2).

A lone surrogate escape (``"\\ud800"``), an invalid escape, a truncated ``\\u`` escape or bytes that are not
UTF-8, placed in any string (value or key) of an otherwise valid body, on any front door, with or without
credentials, is answered 400 with a stable code before any parser or action sees it, audited as a rejected
request, and never logged at ERROR.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.support import MOTOR, TOYOTA, Rig

from .support import error_code_of

# (door, method, path, valid body)
_MESSAGE = {
    "messageId": "m-1",
    "role": "ROLE_USER",
    "parts": [
        {
            "data": {"type": "inventory.search.request", "filters": {"make": "Toyota"}},
            "mediaType": "application/vnd.autoagent.inventory-search-request+json",
        }
    ],
}
DOORS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "rest",
        "POST",
        "/mcp/leads.create",
        {
            "id": "r1",
            "caller": {"sessionId": "s1", "traceId": "t1"},
            "payload": {
                "dealership_id": TOYOTA,
                "customer": {"first_name": "Ann", "email": "ann@example.com", "phone": "+14155550100"},
                "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"], "text": "Yes"},
                "message": "hello",
            },
        },
    ),
    (
        "admin",
        "PUT",
        f"/admin/v1/companies/{MOTOR}/policies/p1",
        {"name": "p1", "allowed_actions": ["inventory.search"], "redact_fields": ["email"]},
    ),
    (
        "mcp-2025",
        "POST",
        "/mcp",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "inventory.search", "arguments": {"dealership_id": TOYOTA, "make": "Toyota"}},
        },
    ),
    (
        "mcp-2026",
        "POST",
        "/mcp",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "inventory.search",
                "arguments": {"dealership_id": TOYOTA},
                "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"}},
            },
        },
    ),
    (
        "a2a-jsonrpc",
        "POST",
        f"/dealers/{TOYOTA}/a2a/jsonrpc",
        {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": _MESSAGE}},
    ),
    ("a2a-rest", "POST", f"/dealers/{TOYOTA}/a2a/message:send", {"message": _MESSAGE}),
]
_HEADERS = {
    "mcp-2025": {"MCP-Protocol-Version": "2025-11-25", "Accept": "application/json, text/event-stream"},
    "mcp-2026": {"MCP-Protocol-Version": "2026-07-28", "Accept": "application/json, text/event-stream"},
    "a2a-jsonrpc": {"A2A-Version": "1.0"},
    "a2a-rest": {"A2A-Version": "1.0"},
}
_KEY = {"rest": "crm", "admin": "admin", "mcp-2025": "crm", "mcp-2026": "crm", "a2a-jsonrpc": "shopper"}

# Raw JSON string tokens (with their quotes) that no conforming decoder may turn into text.
HOSTILE_STRINGS: dict[str, bytes] = {
    "lone-high-surrogate": b'"\\ud800"',
    "lone-low-surrogate": b'"x\\udc00y"',
    "reversed-pair": b'"\\udc00\\ud800"',
    "invalid-escape": b'"\\x41"',
    "truncated-unicode-escape": b'"\\u12"',
    "invalid-utf8-byte": b'"\xff"',
    "encoded-surrogate": b'"\xed\xa0\x80"',
    "overlong-slash": b'"\xc0\xaf"',
}
_MARK = "\x00MARK\x00"


def _string_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], bool]]:
    """Every string in ``value``: (path, is_key)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key), True
            yield from _string_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _string_paths(item, (*path, index))
    elif isinstance(value, str):
        yield path, False


def _marked(body: Any, path: tuple[Any, ...], is_key: bool) -> Any:
    """A copy of ``body`` whose string at ``path`` (a key, or a value) is the marker."""
    if not path:
        return _MARK
    head, rest = path[0], path[1:]
    if isinstance(body, list):
        return [_marked(item, rest, is_key) if i == head else item for i, item in enumerate(body)]
    out: dict[str, Any] = {}
    for key, item in body.items():
        if key == head and is_key and not rest:
            out[_MARK] = item
        elif key == head:
            out[key] = _marked(item, rest, is_key)
        else:
            out[key] = item
    return out


def hostile_bodies(body: dict[str, Any], token: bytes) -> Iterator[bytes]:
    """``body`` once per string field (value or key), with that string replaced by the raw ``token``."""
    for path, is_key in _string_paths(body):
        text = json.dumps(_marked(body, path, is_key)).encode()
        yield text.replace(json.dumps(_MARK).encode(), token)


def _assert_refused(door: str, status: int, body: Any) -> None:
    assert status == 400, (door, status, body)
    code = error_code_of(body)
    if door.startswith("mcp") or door == "a2a-jsonrpc":
        assert body["error"]["code"] == -32700, body
        data = body["error"]["data"]
        assert data.get("code") in ("invalid_request", "SCHEMA_VALIDATION_FAILED"), body
    else:
        assert code in ("invalid_request", "SCHEMA_VALIDATION_FAILED"), body
    assert "retryable" not in json.dumps(body) or '"retryable": true' not in json.dumps(body)


@pytest.mark.parametrize("anonymous", [False, True], ids=["credentialed", "anonymous"])
@pytest.mark.parametrize(("door", "method", "path", "body"), DOORS, ids=[d[0] for d in DOORS])
async def test_an_undecodable_string_in_any_field_of_any_door_is_a_400_audited_and_never_an_error_log(
    rig: Rig,
    caplog: pytest.LogCaptureFixture,
    door: str,
    method: str,
    path: str,
    body: dict[str, Any],
    anonymous: bool,
) -> None:
    headers = {"Content-Type": "application/json", **_HEADERS.get(door, {})}
    if not anonymous and door in _KEY:
        headers["Authorization"] = f"Bearer {rig.keys[_KEY[door]]}"
    before = await rig.audit_count()
    sent = 0
    with caplog.at_level(logging.DEBUG):
        for name, token in HOSTILE_STRINGS.items():
            for raw in hostile_bodies(body, token):
                response = await rig.client.request(method, path, content=raw, headers=headers)
                _assert_refused(f"{door}/{name}", response.status_code, response.json())
                sent += 1
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors[:3]]
    rows = (await rig.audit_rows())[before:]
    assert len(rows) == sent
    assert {r["result_class"] for r in rows} == {"rejected"}
    assert {r["status_code"] for r in rows} == {400}
    assert {r["error_code"] for r in rows} == {"invalid_request"}


async def test_a_valid_surrogate_pair_and_plain_escapes_still_reach_the_action(rig: Rig) -> None:
    text = b'"T\\u006fyota \\ud83d\\ude97 \\"\\n"'
    raw = b'{"id":"ok","payload":{"dealership_id":"' + TOYOTA.encode() + b'","make":' + text + b"}}"
    headers = {"Authorization": f"Bearer {rig.keys['crm']}", "Content-Type": "application/json"}
    response = await rig.client.post("/mcp/inventory.search", content=raw, headers=headers)
    assert response.status_code in (200, 422), response.text
    assert error_code_of(response.json()) != "invalid_request"
