"""The MCP Inspector CLI (a TypeScript MCP client) against `forecourt serve`, via scripts/mcp-inspector-smoke.sh.

Runs when the npm package is installed (``scripts/mcp-inspector-smoke.sh --install`` puts it in .cache/npm);
skips with the reason otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mcp-inspector-smoke.sh"
CLI = ROOT / ".cache" / "npm" / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"


IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def test_the_mcp_inspector_lists_and_calls_tools_against_forecourt_serve() -> None:
    if not CLI.exists() or shutil.which("node") is None:
        reason = "MCP Inspector CLI not installed: run scripts/mcp-inspector-smoke.sh --install (needs node and npm)"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    result = subprocess.run(
        ["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "MCP Inspector smoke test passed" in result.stdout
