"""CPU per MCP ``tools/call`` through the ASGI app in process (no HTTP), several calls in flight.

Every layer a call meets behind the HTTP server runs as shipped (access log and metrics, the request guard, MCP
authentication, the direct path, the gateway pipeline with policy, rate limits, the result cache and the audit
journal's fsync in its helper process); only uvicorn and the socket are left out, so a change to the app shows
without their noise. Calls run ``--concurrency`` at a time, as a loaded worker runs them (the journal's group
commit shares fsyncs between them).

    .venv/bin/python bench/inproc_calls.py --calls 20000 --concurrency 8          # cached calls
    .venv/bin/python bench/inproc_calls.py --cache off                            # every call a store read

Run it pinned (``taskset -c 0``) and alternate the variants being compared: this machine is noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ARGS = {"dealership_id": "demo-toyota-sf", "limit": 20}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _prepare() -> str:
    """The demo data in the configured database, and an API key for the demo group's CRM agent."""
    cli = [str(Path(sys.executable).with_name("forecourt"))]
    subprocess.run([*cli, "db", "upgrade"], check=True, capture_output=True)
    subprocess.run([*cli, "demo"], check=True, capture_output=True)
    made = subprocess.run(
        [*cli, "keys", "create", "--company", "demo-motor-group", "--member", "crm-agent", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return str(json.loads(made.stdout)["key"])


async def _run(calls: int, concurrency: int, key: str) -> dict[str, Any]:
    from forecourt.bootstrap import create_app
    from forecourt.settings import Settings

    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "inventory.search", "arguments": ARGS, "_meta": META},
        }
    ).encode()
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"inventory.search"),
        (b"authorization", b"Bearer " + key.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    app = create_app(Settings())
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    lifespan = asyncio.create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, inbox.get, outbox.put)
    )
    started = await outbox.get()
    if started["type"] != "lifespan.startup.complete":
        raise SystemExit(f"the app did not start: {started}")
    statuses: dict[int, int] = {}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses[message["status"]] = statuses.get(message["status"], 0) + 1

    async def one() -> None:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 8000), "state": {}, "extensions": {},
        }  # fmt: skip
        await app(scope, receive, send)

    async def worker(n: int) -> None:
        for _ in range(n):
            await one()

    await worker(200)  # warm: caches, memos, the helper process
    statuses.clear()
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(calls // concurrency) for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    done = sum(statuses.values())
    await inbox.put({"type": "lifespan.shutdown"})
    await lifespan
    return {
        "calls": done,
        "statuses": statuses,
        "cpu_us_per_call": round(1e6 * cpu / done, 1),
        "wall_us_per_call": round(1e6 * wall / done, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--cache", choices=["on", "off"], default="on")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ.update(
            FORECOURT_DATABASE_URL=f"sqlite+aiosqlite:///{folder}/bench.db",
            FORECOURT_AUDIT_JOURNAL_DIR=f"{folder}/journal",
            FORECOURT_API_KEY_PEPPER="bench-pepper-0123456789abcdef",
            FORECOURT_CACHE_ENABLED="true" if options.cache == "on" else "false",
            FORECOURT_LOG_LEVEL="WARNING",
            **{f"FORECOURT_RATE_{s}_PER_MINUTE": "1000000000" for s in ("COMPANY", "MEMBER", "ACTION", "ANONYMOUS")},
        )
        key = _prepare()
        import uvloop

        print(json.dumps(uvloop.run(_run(options.calls, options.concurrency, key))))


if __name__ == "__main__":
    main()
