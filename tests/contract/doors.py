"""Every front door as a test client over a real socket, answering in one shape.

A door sends one gateway action with its arguments, for one dealership, with one API key, the way a user of
that door would: the REST envelope (``POST /mcp/{action}``), the official ``mcp`` client over Streamable HTTP
in both protocol eras and over stdio (``forecourt mcp --stdio``, a separate process), and A2A on both
bindings (JSON-RPC ``SendMessage`` and HTTP+JSON ``message:send``). Only the AAP skills exist on A2A, so the
suite sends those (``aap.*``) through every door. Each door reduces what came back to an :class:`Answer`:
the Forecourt error ``code`` (A2A carries it as ``details.forecourt_code`` of its ``aap.error``) or the output.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from forecourt.domain.aap_spec import SKILLS, normalise_numbers

FORECOURT = Path(sys.executable).parent / "forecourt"
_SKILLS = {s.action: s for s in SKILLS}


@dataclass
class Answer:
    """What one call answered: an output, or an error code."""

    output: Any = None
    code: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.code is None


class Door(Protocol):
    """One front door."""

    name: str
    surface: str

    async def call(self, action: str, args: dict[str, Any], *, dealership_id: str, key: str) -> Answer: ...


@dataclass
class Server:
    """Where the app under test listens, and how to start ``forecourt mcp --stdio`` against its database."""

    base_url: str
    env: dict[str, str]


class RestDoor:
    """The seed-001 envelope: ``POST /mcp/{action}``."""

    name = surface = "rest"

    def __init__(self, server: Server) -> None:
        self.server = server

    async def call(self, action: str, args: dict[str, Any], *, dealership_id: str, key: str) -> Answer:
        body = {"id": f"req-{uuid.uuid4().hex}", "payload": {**args, "dealership_id": dealership_id}}
        if "idempotency_key" in args:
            body["meta"] = {"idempotencyKey": args["idempotency_key"]}
        async with httpx.AsyncClient(timeout=30) as http:
            reply = await http.post(
                f"{self.server.base_url}/mcp/{action}", json=body, headers={"Authorization": f"Bearer {key}"}
            )
        envelope = reply.json()
        if reply.status_code >= 400:
            return Answer(code=envelope["status"]["error"]["code"])
        return Answer(output=envelope["result"]["output"])


def _mcp_answer(result: Any) -> Answer:
    if result.is_error:
        return Answer(code=json.loads(result.content[0].text)["error"]["code"])
    return Answer(output=result.structured_content)


def _tool(action: str) -> str:
    return action.replace(".", "_") if action.startswith("aap.") else action


class McpHttpDoor:
    """The official ``mcp`` client over Streamable HTTP, in one protocol era."""

    surface = "mcp"

    def __init__(self, server: Server, mode: str) -> None:
        self.server = server
        self.mode = mode
        self.name = f"mcp-{'legacy' if mode == 'legacy' else 'stateless'}"

    async def call(self, action: str, args: dict[str, Any], *, dealership_id: str, key: str) -> Answer:
        import httpx2

        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as hc:
            transport = streamable_http_client(f"{self.server.base_url}/mcp", http_client=hc)
            async with Client(transport, mode=self.mode) as client:  # type: ignore[arg-type]
                result = await client.call_tool(_tool(action), {**args, "dealership_id": dealership_id})
        return _mcp_answer(result)


class StdioDoor:
    """``forecourt mcp --stdio`` spawned by the ``mcp`` client, with the key as its token."""

    name = surface = "stdio"

    def __init__(self, server: Server) -> None:
        self.server = server

    async def call(self, action: str, args: dict[str, Any], *, dealership_id: str, key: str) -> Answer:
        env = {**self.server.env, "FORECOURT_MCP_TOKEN": key, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        params = StdioServerParameters(command=str(FORECOURT), args=["mcp", "--stdio"], env=env)
        async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
            result = await client.call_tool(_tool(action), {**args, "dealership_id": dealership_id})
        return _mcp_answer(result)


def _a2a_message(action: str, args: dict[str, Any]) -> dict[str, Any]:
    skill = _SKILLS[action]
    return {
        "messageId": f"m-{uuid.uuid4().hex}",
        "role": "ROLE_USER",
        "parts": [{"data": args, "mediaType": skill.request_media_type}],
    }


def _a2a_answer(body: dict[str, Any]) -> Answer:
    if body.get("type") == "aap.error":
        return Answer(code=body["details"]["forecourt_code"])
    message = body.get("message") or body
    return Answer(output=dict(normalise_numbers(message["parts"][0]["data"])))


class A2AJsonRpcDoor:
    """A2A JSON-RPC ``SendMessage`` at ``/dealers/{id}/a2a/jsonrpc``."""

    name = "a2a-jsonrpc"
    surface = "a2a"

    def __init__(self, server: Server) -> None:
        self.server = server

    async def call(self, action: str, args: dict[str, Any], *, dealership_id: str, key: str) -> Answer:
        request = {
            "jsonrpc": "2.0",
            "id": uuid.uuid4().hex,
            "method": "SendMessage",
            "params": {"message": _a2a_message(action, args)},
        }
        headers = {"Authorization": f"Bearer {key}", "A2A-Version": "1.0"}
        async with httpx.AsyncClient(timeout=30) as http:
            reply = await http.post(
                f"{self.server.base_url}/dealers/{dealership_id}/a2a/jsonrpc", json=request, headers=headers
            )
        body = reply.json()
        if "error" in body:
            return _a2a_answer(body["error"]["data"])
        return _a2a_answer(body["result"])


class A2AHttpJsonDoor:
    """A2A HTTP+JSON ``POST /dealers/{id}/a2a/message:send``."""

    name = "a2a-http-json"
    surface = "a2a"

    def __init__(self, server: Server) -> None:
        self.server = server

    async def call(self, action: str, args: dict[str, Any], *, dealership_id: str, key: str) -> Answer:
        headers = {"Authorization": f"Bearer {key}", "A2A-Version": "1.0"}
        async with httpx.AsyncClient(timeout=30) as http:
            reply = await http.post(
                f"{self.server.base_url}/dealers/{dealership_id}/a2a/message:send",
                json={"message": _a2a_message(action, args)},
                headers=headers,
            )
        return _a2a_answer(reply.json())


DOOR_NAMES = ("rest", "mcp-legacy", "mcp-stateless", "stdio", "a2a-jsonrpc", "a2a-http-json")


def door(name: str, server: Server) -> Door:
    """The door called ``name``."""
    doors: dict[str, Door] = {
        "rest": RestDoor(server),
        "mcp-legacy": McpHttpDoor(server, "legacy"),
        "mcp-stateless": McpHttpDoor(server, "2026-07-28"),
        "stdio": StdioDoor(server),
        "a2a-jsonrpc": A2AJsonRpcDoor(server),
        "a2a-http-json": A2AHttpJsonDoor(server),
    }
    return doors[name]
