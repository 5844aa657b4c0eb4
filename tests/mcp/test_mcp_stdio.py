"""``forecourt mcp --stdio``: the installed command, spawned by the SDK's stdio client, in both eras."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp_support import CURSOR_SECRET, PEPPER, TOYOTA, Template, error_of
from typer.testing import CliRunner

from forecourt.cli.main import app as cli

FORECOURT = Path(sys.executable).parent / "forecourt"


def _env(db: Path, token: str) -> dict[str, str]:
    return {
        "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_CURSOR_SECRET": CURSOR_SECRET,
        "FORECOURT_MCP_TOKEN": token,
        "FORECOURT_LOG_LEVEL": "WARNING",
    }


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_stdio_serves_tools_resources_and_prompts_as_the_tokens_principal(
    mcp_template: Template, tmp_path: Path, mode: str, version: str
) -> None:
    db = mcp_template.copy_to(tmp_path)
    params = StdioServerParameters(
        command=str(FORECOURT), args=["mcp", "--stdio"], env=_env(db, mcp_template.keys["crm_toyota"])
    )
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


def test_stdio_refuses_to_start_with_an_expired_token(mcp_template: Template, tmp_path: Path) -> None:
    db = mcp_template.copy_to(tmp_path)
    env = {**_env(db, mcp_template.keys["crm_expired"]), "PATH": "/usr/bin:/bin"}
    expired = subprocess.run(
        [str(FORECOURT), "mcp", "--stdio"],
        env=env,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert expired.returncode == 1  # refused (docs/operations.md: 0 ok, 1 refused, 2 usage)
    assert b"auth.expired" in expired.stderr
    assert expired.stdout == b""  # stdout carries JSON-RPC only


def test_stdio_needs_a_token(tmp_path: Path) -> None:
    (tmp_path / "x.db").touch()
    result = CliRunner().invoke(
        cli,
        ["mcp", "--stdio"],
        env={"FORECOURT_MCP_TOKEN": "", "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/x.db"},
    )
    assert result.exit_code == 2
    assert "FORECOURT_MCP_TOKEN" in result.output


def test_stdio_without_a_database_names_the_variable_and_creates_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env["FORECOURT_MCP_TOKEN"] = "fck_aaaaaaaaaa_" + "a" * 40
    result = subprocess.run(
        [str(FORECOURT), "mcp", "--stdio"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert "FORECOURT_DATABASE_URL" in lines[0]
    assert "Traceback" not in result.stderr.decode()
    assert result.stdout == b""
    assert list(tmp_path.iterdir()) == []


def test_stdio_refuses_a_sqlite_file_that_does_not_exist_instead_of_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    result = CliRunner().invoke(
        cli,
        ["mcp", "--stdio"],
        env={"FORECOURT_MCP_TOKEN": "x", "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{missing}"},
    )
    assert result.exit_code == 2
    assert "forecourt db upgrade" in result.output
    assert not missing.exists()
