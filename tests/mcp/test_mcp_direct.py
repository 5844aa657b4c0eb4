"""The direct path of a single ``tools/call`` answers exactly what the SDK's handler answers, in both eras.

A request with a ``progressToken`` in ``_meta`` is one the direct path leaves to the SDK, so the same call sent
with and without it compares the two paths over a socket; what the direct path must not take (another method,
a header that disagrees with the body, ``find_tools``, an unknown tool) keeps the SDK's own answer.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp_support import TOYOTA, LiveServer, http_client

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"


def _body(tool: str, arguments: dict[str, Any], *, modern: bool, progress: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if modern:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "direct-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    if progress:
        meta["progressToken"] = "p-1"
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def _headers(tool: str, *, modern: bool) -> dict[str, str]:
    if modern:
        return {"Accept": ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool}
    return {"Accept": ACCEPT, "MCP-Protocol-Version": LEGACY}


def _message(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, whether JSON or one SSE ``message`` event."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


async def _post(hc: httpx2.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx2.Response:
    return await hc.post(url, content=json.dumps(body), headers={"Content-Type": "application/json", **headers})


def _stable(message: dict[str, Any]) -> dict[str, Any]:
    """The message without what differs between two calls of the same search.

    The signed cursor and an error's trace id differ, and so may the order of keys in a text item (a repeated
    call can be a cache hit): JSON text items are compared as values.
    """
    text = json.dumps(message)
    result = message.get("result") or {}
    cursor = (result.get("structuredContent") or {}).get("next_cursor")
    if isinstance(cursor, str):
        text = text.replace(cursor, "<cursor>")
    stable = dict(json.loads(text))
    for item in (stable.get("result") or {}).get("content") or []:
        if item.get("type") == "text" and item["text"].startswith("{"):
            item["text"] = json.loads(item["text"])
            if isinstance(item["text"].get("error"), dict):
                item["text"]["error"].pop("trace_id", None)  # each call has its own trace
    return stable


@pytest.mark.parametrize("modern", [True, False], ids=["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("inventory.search", {"dealership_id": TOYOTA, "limit": 3}),
        ("inventory.search", {"dealership_id": TOYOTA, "limit": 2, "view": "full"}),
        ("dealer.information", {"dealership_id": TOYOTA}),
        ("inventory.get", {"dealership_id": TOYOTA, "vehicle_id": "veh_missing"}),
        ("inventory.search", {"dealership_id": "demo-nowhere"}),
        ("inventory.search", {"dealership_id": TOYOTA, "limit": "many"}),
    ],
    ids=["search", "full-view", "dealer", "not-found", "foreign-dealership", "invalid-argument"],
)
async def test_a_direct_answer_equals_the_sdk_answer(
    live: LiveServer, keys: dict[str, str], modern: bool, tool: str, arguments: dict[str, Any]
) -> None:
    direct = live.surface_direct
    async with http_client(keys["crm"]) as hc:
        before = direct.answered
        fast = await _post(hc, live.url, _body(tool, arguments, modern=modern), _headers(tool, modern=modern))
        assert direct.answered == before + 1
        slow = await _post(
            hc, live.url, _body(tool, arguments, modern=modern, progress=True), _headers(tool, modern=modern)
        )
        assert direct.answered == before + 1
    assert fast.status_code == slow.status_code == 200
    assert fast.headers["content-type"] == "application/json"
    assert _stable(_message(fast)) == _stable(_message(slow))


async def test_a_modern_header_that_disagrees_with_the_body_gets_the_sdks_rejection(
    live: LiveServer, keys: dict[str, str]
) -> None:
    body = _body("inventory.search", {"dealership_id": TOYOTA}, modern=True)
    headers = {**_headers("inventory.search", modern=True), "Mcp-Name": "inventory.facets"}
    async with http_client(keys["crm"]) as hc:
        before = live.surface_direct.answered
        response = await _post(hc, live.url, body, headers)
    assert live.surface_direct.answered == before
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020  # the SDK's HEADER_MISMATCH


@pytest.mark.parametrize("modern", [True, False], ids=["2026-07-28", "2025-11-25"])
async def test_calls_the_direct_path_does_not_own_go_to_the_sdk(
    live: LiveServer, keys: dict[str, str], modern: bool
) -> None:
    async with http_client(keys["crm"]) as hc:
        before = live.surface_direct.answered
        unknown = await _post(
            hc, live.url, _body("no.such_tool", {}, modern=modern), _headers("no.such_tool", modern=modern)
        )
        batch = await hc.post(
            live.url,
            content=json.dumps([_body("inventory.search", {"dealership_id": TOYOTA}, modern=modern)]),
            headers={"Content-Type": "application/json", **_headers("inventory.search", modern=modern)},
        )
        json_only = await _post(
            hc,
            live.url,
            _body("inventory.search", {"dealership_id": TOYOTA}, modern=modern),
            {**_headers("inventory.search", modern=modern), "Accept": "application/json"},
        )
    assert live.surface_direct.answered == before
    assert _message(unknown)["error"]["code"] == -32602  # the SDK's handler: an unknown tool
    assert batch.status_code >= 400
    assert json_only.status_code == 406


async def test_an_unexpected_failure_on_the_direct_path_is_a_value_free_internal_error(
    live: LiveServer, keys: dict[str, str]
) -> None:
    surface = live.surface

    async def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("SELECT secret FROM internals")

    surface.run_tool = explode
    tool, arguments = "inventory.search", {"dealership_id": TOYOTA}
    async with http_client(keys["crm"]) as hc:
        response = await _post(hc, live.url, _body(tool, arguments, modern=True), _headers(tool, modern=True))
    message = response.json()
    assert message["error"]["code"] == -32603
    assert message["error"]["data"] == {"code": "internal_error"}
    assert "secret" not in response.text


@pytest.mark.parametrize("version", [None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_every_handshake_era_version_gets_the_same_answer_from_both_paths(
    live: LiveServer, keys: dict[str, str], version: str | None
) -> None:
    headers = {"Accept": ACCEPT, **({"MCP-Protocol-Version": version} if version else {})}
    arguments = {"dealership_id": TOYOTA, "limit": 2}
    async with http_client(keys["crm"]) as hc:
        before = live.surface_direct.answered
        fast = await _post(hc, live.url, _body("inventory.search", arguments, modern=False), headers)
        slow = await _post(hc, live.url, _body("inventory.search", arguments, modern=False, progress=True), headers)
    assert live.surface_direct.answered == before + 1
    assert _stable(_message(fast)) == _stable(_message(slow))


class _Surface:
    server_info = {"name": "forecourt", "version": "test"}


async def _unused_app(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not reached")


def test_a_modern_direct_answer_keeps_the_results_own_meta_beside_the_server_info_stamp() -> None:
    from forecourt.surfaces.mcp.direct import DirectCalls

    direct = DirectCalls(_unused_app, _Surface(), max_body_bytes=1024)  # type: ignore[arg-type]
    marked = {"content": [], "isError": False, "_meta": {"forecourt/provenance": {"sources": ["upstream"]}}}
    answer = json.loads(direct._encode_result(marked, modern=True))
    assert answer["_meta"] == {
        "forecourt/provenance": {"sources": ["upstream"]},
        "io.modelcontextprotocol/serverInfo": _Surface.server_info,
    }
    assert answer["resultType"] == "complete"
    assert "_meta" not in json.loads(direct._encode_result({"content": [], "isError": False}, modern=False))
