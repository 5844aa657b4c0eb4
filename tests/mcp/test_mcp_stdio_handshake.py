"""``forecourt mcp --stdio`` answers ``initialize`` before the app is built, exactly as the SDK's server would.

The early answer is a direct path beside the SDK (house style 12): every kind of ``initialize`` it takes is
compared here with the SDK's answer from the stdio surface, and whatever it does not take is left to the SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from mcp_support import CURSOR_SECRET, PEPPER, Template, settings_for
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from forecourt.bootstrap import build_services
from forecourt.surfaces.mcp import handshake
from forecourt.surfaces.mcp.handshake import early_answer
from forecourt.surfaces.mcp.server import McpSurface
from forecourt.surfaces.mcp.stdio import EarlyHandshake

FORECOURT = Path(sys.executable).parent / "forecourt"
CLIENT = {"name": "claude-ai", "version": "0.1.0"}

TAKEN: list[dict[str, Any]] = [
    *({"protocolVersion": v, "capabilities": {}, "clientInfo": CLIENT} for v in HANDSHAKE_PROTOCOL_VERSIONS),
    {"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": CLIENT},
    {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": CLIENT},
    {"protocolVersion": "", "capabilities": {}, "clientInfo": CLIENT},
    {"protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": True}}, "clientInfo": CLIENT},
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {}, "sampling": {}, "elicitation": {}},
        "clientInfo": CLIENT,
    },
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "roots": {"listChanged": False},
            "sampling": {"context": {}, "tools": {}},
            "elicitation": {"form": {}, "url": None},
            "experimental": {"x-trace": {"on": True}},
            "extensions": {"io.modelcontextprotocol/ui": {}},
            "somethingNew": [1, 2],
        },
        "clientInfo": {**CLIENT, "title": "Claude", "description": None, "websiteUrl": "https://claude.ai", "x": 1},
    },
]
"""Requests the early path answers (each also with a string id)."""

LEFT: list[Any] = [
    {"protocolVersion": "2025-11-25", "capabilities": {"tasks": {}}, "clientInfo": CLIENT},
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {**CLIENT, "icons": []}},
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT, "_meta": {"progressToken": 1}},
    {"protocolVersion": "2025-11-25", "capabilities": {"roots": "x"}, "clientInfo": CLIENT},
    {"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": "yes"}}, "clientInfo": CLIENT},
    {"protocolVersion": "2025-11-25", "capabilities": {"sampling": {"context": 1}}, "clientInfo": CLIENT},
    {"protocolVersion": "2025-11-25", "capabilities": {"experimental": {"x": 1}}, "clientInfo": CLIENT},
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x"}},
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": 1}},
    {"protocolVersion": 20251125, "capabilities": {}, "clientInfo": CLIENT},
    {"capabilities": {}, "clientInfo": CLIENT},
    {"protocolVersion": "2025-11-25", "capabilities": [], "clientInfo": CLIENT},
    None,
]
"""``initialize`` params the early path leaves to the SDK (some valid, some not)."""


def _request(params: Any, request_id: int | str = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def _line(message: Any) -> bytes:
    return json.dumps(message).encode()


@pytest.fixture
async def surface(mcp_template: Template, tmp_path: Path) -> AsyncIterator[McpSurface]:
    """The stdio surface as ``forecourt mcp --stdio`` builds it (federating upstreams, following events)."""
    services = build_services(settings_for(mcp_template.copy_to(tmp_path)))
    surface = McpSurface(services.gateway, services.settings, dispatcher=services.events, hub=services.upstreams)
    try:
        yield surface
    finally:
        await surface.close()
        await services.close()


async def _sdk_answer(surface: McpSurface, line: bytes) -> dict[str, Any]:
    """What the SDK's server answers ``line`` as the first message on a fresh connection."""
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](4)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](4)
    async with anyio.create_task_group() as tg:
        tg.start_soon(surface.server.run, server_reads, server_writes, surface.server.create_initialization_options())
        try:
            await to_server.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False)))
        except ValueError as exc:
            await to_server.send(exc)
        with anyio.fail_after(10):
            answer = await from_server.receive()
        tg.cancel_scope.cancel()
    return dict(json.loads(answer.message.model_dump_json(by_alias=True, exclude_unset=True)))


def test_the_handshake_versions_are_the_sdks() -> None:
    assert handshake.HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert handshake.LATEST_HANDSHAKE_VERSION == LATEST_HANDSHAKE_VERSION


@pytest.mark.parametrize("request_id", [1, "init-1"])
async def test_every_initialize_answered_early_is_answered_exactly_as_the_sdk_answers_it(
    surface: McpSurface, request_id: int | str
) -> None:
    for params in TAKEN:
        line = _line(_request(params, request_id))
        early = early_answer(line)
        assert early is not None, params
        assert early == await _sdk_answer(surface, line), params


@pytest.mark.parametrize(
    "line",
    [
        *(_line(_request(params)) for params in LEFT),
        _line({**_request(TAKEN[0]), "extra": 1}),
        _line(_request(TAKEN[0], request_id=True)),
        _line({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}),
        _line({"jsonrpc": "2.0", "method": "initialize", "params": TAKEN[0]}),
        _line({"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": TAKEN[0]}),
        _line(_request(TAKEN[0])).replace(b'"id": 1', b'"id": NaN'),
        _line(_request({**TAKEN[0], "clientInfo": {"name": "x", "version": "1", "n": 1}})).replace(b"1}", b"NaN}"),
        "\u00e9".encode("latin-1") + _line(_request(TAKEN[0])),
        b"",
        b"not json",
    ],
)
def test_anything_else_is_left_to_the_sdk(line: bytes) -> None:
    assert early_answer(line) is None


async def test_the_first_line_is_read_without_taking_anything_after_it() -> None:
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    first = _line(_request(TAKEN[0]))
    os.write(stdin_write, first + b"\n" + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    try:
        early = EarlyHandshake.start(stdin_read, stdout_write)
        assert await asyncio.wait_for(early.opening(), 10) == first
        assert json.loads(os.read(stdout_read, 65536)) == early_answer(first) == early.answered
        os.close(stdin_write)
        assert os.read(stdin_read, 65536) == b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    finally:
        for fd in (stdin_read, stdout_read, stdout_write):
            os.close(fd)


async def test_a_first_message_other_than_initialize_is_read_but_not_answered() -> None:
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    os.write(stdin_write, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    os.close(stdin_write)
    try:
        early = EarlyHandshake.start(stdin_read, stdout_write)
        assert await asyncio.wait_for(early.opening(), 10) == b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        assert early.answered is None
        os.set_blocking(stdout_read, False)
        with pytest.raises(BlockingIOError):
            os.read(stdout_read, 1)
    finally:
        for fd in (stdin_read, stdout_read, stdout_write):
            os.close(fd)


def _env(db: Path, token: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")},
        "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_CURSOR_SECRET": CURSOR_SECRET,
        "FORECOURT_MCP_TOKEN": token,
        "FORECOURT_LOG_LEVEL": "WARNING",
    }


def test_the_sdk_takes_over_the_conversation_the_early_answer_began(mcp_template: Template, tmp_path: Path) -> None:
    conversation = [
        _request({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}, 7),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 9, "method": "ping"},
    ]
    env = _env(mcp_template.copy_to(tmp_path), mcp_template.keys["crm_toyota"])
    proc = subprocess.Popen(
        [str(FORECOURT), "mcp", "--stdio"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test instead of hanging it
    watchdog.start()
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b"".join(_line(m) + b"\n" for m in conversation))
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(3)]  # then stdin closes: the host leaves
        _, stderr = proc.communicate(b"")
    finally:
        watchdog.cancel()
    assert proc.returncode == 0, stderr.decode()
    assert answers[0] == early_answer(_line(conversation[0]))
    by_id = {a["id"]: a for a in answers}
    assert sorted(by_id) == [7, 8, 9]
    assert {"inventory.search", "leads.create"} <= {t["name"] for t in by_id[8]["result"]["tools"]}
    assert by_id[9]["result"] == {}
    assert b"differs" not in stderr


def test_a_refused_token_still_stops_the_command_after_an_early_answer(mcp_template: Template, tmp_path: Path) -> None:
    env = _env(mcp_template.copy_to(tmp_path), mcp_template.keys["crm_expired"])
    done = subprocess.run(
        [str(FORECOURT), "mcp", "--stdio"],
        input=_line(_request(TAKEN[0])) + b"\n",
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1  # refused (docs/operations.md: 0 ok, 1 refused, 2 usage)
    assert b"auth.expired" in done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [1]
