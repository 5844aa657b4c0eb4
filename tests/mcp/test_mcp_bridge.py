"""``forecourt mcp --stdio --url``: a desktop host's stdio bridged to a remote Forecourt, spawned by the SDK's
stdio client against the real app on a loopback socket, in both eras. The desktop side has no database, pepper
or cursor secret: only the URL and the key (from the environment or a file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp_support import TOYOTA, LiveServer, error_of, http_client, mcp_client, wait_for

FORECOURT = Path(sys.executable).parent / "forecourt"
ERAS = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]


def _mcp_error(exc: BaseException) -> MCPError:
    """The MCPError the SDK raised, alone or inside its task group's exception group."""
    if isinstance(exc, MCPError):
        return exc
    assert isinstance(exc, BaseExceptionGroup), repr(exc)
    (found,) = [e for e in exc.exceptions if isinstance(e, MCPError | BaseExceptionGroup)]
    return _mcp_error(found)


def _desktop(tmp_path: Path) -> Path:
    """The host's working folder: the bridge must leave nothing in it (no database file, no cache)."""
    folder = tmp_path / "desktop"
    folder.mkdir()
    return folder


def _params(live: LiveServer, cwd: Path, env: dict[str, str], *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(FORECOURT), args=["mcp", "--stdio", "--url", live.url, *args], env=env, cwd=cwd
    )


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_the_bridge_serves_the_remote_tools_resources_and_prompts_as_the_keys_member(
    live: LiveServer, keys: dict[str, str], tmp_path: Path, mode: str, version: str
) -> None:
    desktop = _desktop(tmp_path)
    params = _params(live, desktop, {"FORECOURT_MCP_TOKEN": keys["crm_toyota"]})
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        assert client.protocol_version == version
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"inventory.search", "leads.create", "dealer.information"} <= names  # the crm toolset
        found = await client.call_tool("inventory.search", {"limit": 2})  # the key is bound to one rooftop
        assert not found.is_error
        vehicle = found.structured_content["items"][0]
        read = await client.read_resource(f"automotive://dealers/{TOYOTA}/vehicles/{vehicle['id']}")
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert json.loads(content.text)["vin"] == vehicle["vin"]
        denied = await client.call_tool("inventory.search", {"dealership_id": "demo-honda-oak"})
        assert error_of(denied)["code"] == "auth.tenancy_denied"
        prompt = await client.get_prompt("summarise_service_lane", {})
        assert prompt.messages
    assert list(desktop.iterdir()) == []


async def test_the_bridge_reads_the_key_from_a_file_named_in_the_environment(
    live: LiveServer, keys: dict[str, str], tmp_path: Path
) -> None:
    token_file = tmp_path / "forecourt-key"
    token_file.write_text(keys["crm_toyota"] + "\n")
    params = _params(live, _desktop(tmp_path), {"FORECOURT_MCP_TOKEN_FILE": str(token_file)})
    async with Client(params, mode="auto") as client:
        assert not (await client.call_tool("inventory.search", {"limit": 1})).is_error


@pytest.mark.parametrize(("mode", "version"), ERAS)
@pytest.mark.parametrize(("key", "code"), [("crm_expired", "auth.expired"), (None, "auth.unauthorized")])
async def test_a_refused_key_tells_the_user_what_to_set_in_both_eras(
    live: LiveServer, keys: dict[str, str], tmp_path: Path, mode: str, version: str, key: str | None, code: str
) -> None:
    del version
    token = keys[key] if key else "fck_notakey_" + "x" * 40
    errlog = tmp_path / "host-mcp.log"
    params = _params(live, _desktop(tmp_path), {"FORECOURT_MCP_TOKEN": token})
    with errlog.open("w") as log, pytest.raises(BaseException) as refused:  # noqa: PT011 - the SDK's group
        async with Client(stdio_client(params, errlog=log), mode=mode) as client:  # type: ignore[arg-type]
            await client.list_tools()
    error = _mcp_error(refused.value).error
    assert error.code == -32001
    assert isinstance(error.data, dict)
    assert error.data["code"] == code
    assert "FORECOURT_MCP_TOKEN" in error.message
    assert "forecourt keys create" in error.message
    logged = errlog.read_text()
    assert "FORECOURT_MCP_TOKEN" in logged
    assert token not in logged
    assert token not in error.message


def test_the_bridge_answers_initialize_without_importing_the_store_or_the_sdk(
    live: LiveServer, keys: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env |= {"FORECOURT_MCP_TOKEN": keys["crm"], "PYTHONPROFILEIMPORTTIME": "1"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    process = subprocess.Popen(
        [str(FORECOURT), "mcp", "--stdio", "--url", live.url],
        env=env,
        cwd=_desktop(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(json.dumps(initialize).encode() + b"\n")
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())
    _, stderr = process.communicate(timeout=60)
    assert answer["id"] == 1
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    imported = {line.rsplit("|", 1)[-1].strip() for line in stderr.decode().splitlines() if "|" in line}
    assert "forecourt.cli.mcp_bridge" in imported
    assert not {name for name in imported if name.startswith(("forecourt.store", "sqlalchemy", "forecourt.bootstrap"))}
    assert "mcp" not in imported
    assert process.returncode == 0


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    return subprocess.run(
        [str(FORECOURT), *args],
        env=base | env,
        cwd=cwd,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_the_bridge_without_a_key_names_both_ways_to_give_one(tmp_path: Path) -> None:
    result = _run(["mcp", "--stdio", "--url", "https://forecourt.example/mcp"], {}, _desktop(tmp_path))
    assert result.returncode == 2
    assert b"FORECOURT_MCP_TOKEN" in result.stderr
    assert b"FORECOURT_MCP_TOKEN_FILE" in result.stderr
    assert result.stdout == b""


def test_the_bridge_refuses_to_send_the_key_in_clear_to_another_host(tmp_path: Path) -> None:
    result = _run(
        ["mcp", "--stdio", "--url", "http://forecourt.example/mcp"],
        {"FORECOURT_MCP_TOKEN": "fck_aaaaaaaaaa_" + "a" * 40},
        _desktop(tmp_path),
    )
    assert result.returncode == 2
    assert b"https" in result.stderr
    assert result.stdout == b""


LEADS = f"automotive://dealers/{TOYOTA}/leads"


async def _create_lead(live: LiveServer, key: str) -> None:
    lead = {
        "dealership_id": TOYOTA,
        "customer": {"first_name": "Dana", "last_name": "Bridge", "email": "dana.bridge@example.com"},
        "message": "Is the Corolla still available?",
    }
    async with http_client(key) as hc, mcp_client(live.url, hc, "auto") as other:
        assert not (await other.call_tool("leads.create", lead)).is_error


async def test_a_legacy_subscription_through_the_bridge_hears_another_clients_lead(
    live: LiveServer, keys: dict[str, str], tmp_path: Path
) -> None:
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            seen.append(str(message.params.uri))

    params = _params(live, _desktop(tmp_path), {"FORECOURT_MCP_TOKEN": keys["crm"]})
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(LEADS)
        await _create_lead(live, keys["crm"])
        await wait_for(lambda: LEADS in seen, 10.0)


async def test_a_listen_stream_through_the_bridge_hears_another_clients_lead(
    live: LiveServer, keys: dict[str, str], tmp_path: Path
) -> None:
    params = _params(live, _desktop(tmp_path), {"FORECOURT_MCP_TOKEN": keys["crm"]})
    async with Client(params, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=[LEADS]) as sub:
            assert sub.honored.resource_subscriptions == [LEADS]
            await _create_lead(live, keys["crm"])
            with anyio.fail_after(10):
                async for event in sub:
                    assert str(event.uri) == LEADS  # type: ignore[union-attr]
                    break
