"""The tool budget holds with federation: a role toolset's ``tools/list`` stays within 8,000 tokens.

With a real upstream server registered for the demo CRM agent's company, the CRM toolset (already near the
budget on its own) must keep every upstream tool behind ``find_tools``, and ``forecourt tools list --tokens``
must count exactly what the member's host is given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from upstream_support import PEPPER, LiveServer, UpstreamProcess, mcp_client, wait_for

from forecourt.actions.toolsets import TOOL_BUDGET_TOKENS

MEMBER = "demo-motor-group/crm-agent"


def _cli(live: LiveServer, *args: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env.update(
        {
            "FORECOURT_DATABASE_URL": live.settings.database_url,
            "FORECOURT_API_KEY_PEPPER": PEPPER,
            "FORECOURT_ALLOW_PRIVATE_TARGETS": "true",
            "FORECOURT_LOG_LEVEL": "WARNING",
        }
    )
    command = [str(Path(sys.executable).parent / "forecourt"), "tools", "list", "--member", MEMBER, "--json", *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


async def test_upstream_tools_go_behind_find_tools_past_the_budget_and_the_cli_counts_what_the_member_gets(
    live: LiveServer, upstream: UpstreamProcess, keys: dict[str, str]
) -> None:
    response = await live.admin("PUT", "/upstreams/up", keys["admin"], {"url": upstream.url, "mode": "legacy"})
    assert response.status_code == 200, response.text

    async def connected() -> bool:
        return bool(live.hub.tool_names("demo-motor-group/up"))

    await wait_for(connected)
    hc, client = mcp_client(live.url, keys["crm"])
    async with hc, client:
        listed = [t.name for t in (await client.list_tools()).tools]
        found = await client.call_tool("find_tools", {"query": "echo the text back"})
    assert "find_tools" in listed
    assert not any(name.startswith("up.") for name in listed)
    assert "up.echo" in {t["name"] for t in found.structured_content["tools"]}  # still reachable

    report = _cli(live, "--tokens")
    assert sorted(t["name"] for t in report["per_tool"]) == sorted(listed)  # type: ignore[attr-defined]
    assert all(0 < n <= TOOL_BUDGET_TOKENS for n in report["tokens"].values())  # type: ignore[attr-defined]
