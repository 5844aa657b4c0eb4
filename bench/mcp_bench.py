"""MCP `tools/call inventory.search` over Streamable HTTP: Forecourt's full pipeline versus a bare MCPServer.

One run builds a demo database (SQLite), then for each of two servers started as separate processes
(uvicorn, one worker each):

- ``full``: ``create_app(settings)`` — the real `/mcp` endpoint: Host check, API-key authentication, the
  low-level MCP server, ``Gateway.invoke`` (validation, tenancy, policy, rate limits, the result cache — on by default,
  ``FORECOURT_CACHE_ENABLED=false`` turns it off — adapter, redaction, audit records, metrics), the dealer-data adapter;
- ``bare``: an ``MCPServer`` whose ``inventory.search`` tool runs the same store query and representation
  (``uow.inventory.search`` + ``vehicle_repr``) with no gateway, no auth and no audit;

(``--with-static`` adds ``static``: an MCPServer answering a page computed once — the SDK + HTTP ceiling.)

It drives 2026-07-28 ``tools/call`` requests with ``wrk`` (a separate process, bench/lua/mcp.lua; every answer
is checked), and prints throughput, p50/p95/p99 and the full/bare ratio as JSON.

    apt-get install -y wrk
    .venv/bin/python bench/mcp_bench.py --duration 15 --connections 16

Rate limits are raised for the run (the defaults would refuse a load test, which is their job).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LUA = ROOT / "bench" / "lua" / "mcp.lua"
PEPPER = "mcp-bench-pepper-0123456789abcdef"
DEALER = "demo-toyota-sf"


def _env(db: str, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "FORECOURT_DATABASE_URL": db,
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_HOST": "127.0.0.1",
        "FORECOURT_PORT": str(port),
        "FORECOURT_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "FORECOURT_LOG_LEVEL": "WARNING",
        "FORECOURT_RATE_COMPANY_PER_MINUTE": "1000000000",
        "FORECOURT_RATE_MEMBER_PER_MINUTE": "1000000000",
        "FORECOURT_RATE_ACTION_PER_MINUTE": "1000000000",
    }


async def _prepare(url: str) -> str:
    from forecourt.demo import load_demo
    from forecourt.gateway.auth.apikeys import ApiKeyService
    from forecourt.gateway.backends.memory import MemoryRevocationList
    from forecourt.store import open_store_url, upgrade_async

    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=60)
        issued = await ApiKeyService(store, PEPPER, MemoryRevocationList()).create("demo-motor-group", "crm-agent")
        return issued.key
    finally:
        await store.close()


async def _create_pg(admin_url: str) -> str:
    import asyncpg

    name = f"forecourt_mcp_bench_{os.getpid()}"
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    base = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    return f"{base}/{name}"


async def _drop_pg(admin_url: str, url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    finally:
        await conn.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------------- servers


def _freeze() -> None:
    """What ``forecourt serve`` does once the app is built: start-up objects leave the collector's generations."""
    gc.collect()
    gc.freeze()


def serve_full() -> None:
    """The real app (settings from the environment)."""
    import uvicorn

    from forecourt.bootstrap import create_app
    from forecourt.settings import Settings

    settings = Settings()
    app = create_app(settings)
    _freeze()
    uvicorn.run(app, host="127.0.0.1", port=settings.port, log_level="warning", access_log=False)


def serve_bare() -> None:
    """A bare MCPServer with the same store query, no gateway."""
    import uvicorn
    from mcp.server import MCPServer

    from forecourt.actions.inventory import build_query
    from forecourt.actions.representations import vehicle_repr
    from forecourt.contract.paging import page_output
    from forecourt.settings import Settings
    from forecourt.store import open_store

    settings = Settings()
    store = open_store(settings)
    server = MCPServer("bare")

    @server.tool(name="inventory.search", structured_output=True)
    async def inventory_search(dealership_id: str, limit: int = 20) -> dict[str, Any]:
        query = build_query(dealership_id, {"limit": limit}, offset=0, limit=limit)
        async with store.read() as uow:  # the same read-only unit of work the gateway hands this action
            found = await uow.inventory.search(query)
        return page_output([vehicle_repr(v) for v in found.items], None, found.total)

    app = server.streamable_http_app(host="127.0.0.1")
    _freeze()
    uvicorn.run(app, host="127.0.0.1", port=settings.port, log_level="warning", access_log=False)


def serve_static() -> None:
    """A bare MCPServer answering a page computed once at start-up: the SDK + HTTP ceiling, no database per call."""
    import uvicorn
    from mcp.server import MCPServer

    from forecourt.actions.inventory import build_query
    from forecourt.actions.representations import vehicle_repr
    from forecourt.contract.paging import page_output
    from forecourt.settings import Settings
    from forecourt.store import open_store

    settings = Settings()

    async def first_page() -> dict[str, Any]:
        store = open_store(settings)
        try:
            async with store.read() as uow:
                found = await uow.inventory.search(build_query(DEALER, {"limit": 10}, offset=0, limit=10))
        finally:
            await store.close()
        return page_output([vehicle_repr(v) for v in found.items], None, found.total)

    page = asyncio.run(first_page())
    server = MCPServer("static")

    @server.tool(name="inventory.search", structured_output=True)
    async def inventory_search(dealership_id: str, limit: int = 20) -> dict[str, Any]:
        return page

    app = server.streamable_http_app(host="127.0.0.1")
    _freeze()
    uvicorn.run(app, host="127.0.0.1", port=settings.port, log_level="warning", access_log=False)


# ---------------------------------------------------------------------------------------------- driver


def _wait_ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def _check(port: int, token: str | None) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "inventory.search",
                "arguments": {"dealership_id": DEALER, "limit": 10},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "check", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    ).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "inventory.search",
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    if '"vin"' not in text or '"isError":true' in text:
        raise RuntimeError(f"unexpected answer: {text[:300]}")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wrk(port: int, token: str | None, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    env = {**os.environ, "BENCH_TOKEN": token or "", "BENCH_DEALERSHIP": DEALER}
    subprocess.run(  # warm-up
        ["wrk", "-t1", f"-c{args.connections}", "-d3s", "-s", str(LUA), f"http://127.0.0.1:{port}/"],
        env=env,
        capture_output=True,
        check=True,
    )
    cpu_before = _cpu_seconds(server_pid)
    out = subprocess.run(
        [
            "wrk",
            f"-t{args.threads}",
            f"-c{args.connections}",
            f"-d{args.duration}s",
            "--timeout",
            "10s",
            "-s",
            str(LUA),
            f"http://127.0.0.1:{port}/",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    cpu = _cpu_seconds(server_pid) - cpu_before
    line = next(x for x in out.stdout.splitlines() if x.startswith("JSON "))
    result: dict[str, Any] = json.loads(line[5:])
    result["rps"] = round(result["requests"] / result["seconds"], 1)
    # server CPU per answered call: the comparison that a busy machine distorts least
    result["server_cpu_ms_per_request"] = round(1000 * cpu / max(result["requests"], 1), 3)
    if out.stderr.strip():
        result["stderr"] = out.stderr.strip()[:500]
    return result


def _run_one(kind: str, db: str, token: str | None, args: argparse.Namespace) -> dict[str, Any]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, __file__, f"serve-{kind}"], env=_env(db, port))
    try:
        _wait_ready(port, proc)
        _check(port, token)
        return _wrk(port, token, args, proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="run", choices=["run", "serve-full", "serve-bare", "serve-static"])
    parser.add_argument("--duration", type=int, default=15)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--postgres",
        metavar="ADMIN_URL",
        help="run on a fresh PostgreSQL database, e.g. postgresql://postgres@127.0.0.1/test",
    )
    parser.add_argument(
        "--with-static", action="store_true", help="also measure a bare MCPServer answering a precomputed page"
    )
    args = parser.parse_args()
    if args.mode == "serve-static":
        serve_static()
        return
    if args.mode == "serve-full":
        serve_full()
        return
    if args.mode == "serve-bare":
        serve_bare()
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = (
            asyncio.run(_create_pg(args.postgres)) if args.postgres else f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        )
        try:
            token = asyncio.run(_prepare(db))
            static = _run_one("static", db, None, args) if args.with_static else None
            bare = _run_one("bare", db, None, args)
            full = _run_one("full", db, token, args)
        finally:
            if args.postgres:
                asyncio.run(_drop_pg(args.postgres, db))
    report = {
        "full": full,
        "bare": bare,
        "throughput_ratio": round(full["rps"] / bare["rps"], 3),
        # bare CPU per call / full CPU per call: the throughput ratio both would reach on CPUs of their own
        "cpu_efficiency_ratio": round(bare["server_cpu_ms_per_request"] / full["server_cpu_ms_per_request"], 3),
        **({"static": static} if static else {}),
        "target": "full >= 0.75 x bare throughput, full p99 <= 50 ms",
        "database": "postgresql" if args.postgres else "sqlite",
        "settings": {"duration_s": args.duration, "connections": args.connections, "wrk_threads": args.threads},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
