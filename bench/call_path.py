"""The path of one MCP ``tools/call``: which Forecourt modules it enters and what it costs in CPU.

Runs the real app in-process (``create_app``, the 2026-07-28 stateless ``/mcp`` door, API-key authentication,
policy, rate limits, audit, metrics — everything as shipped) through ``httpx.ASGITransport`` on a demo SQLite
database, with the result cache off so every call runs the whole path down to the store.

- ``files``: the distinct ``src/forecourt`` modules entered while one call runs (``sys.setprofile``), grouped by
  top-level package, and how often the call crosses between ``surfaces`` and ``adapters`` code.
- ``cpu_ms_per_call``: process CPU time over ``--calls`` calls, divided by the number of calls (one connection,
  no concurrency; the ASGI transport has no sockets, so this is the app's own work).

    .venv/bin/python bench/call_path.py --calls 2000
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

SRC = str(Path(__file__).resolve().parents[1] / "src" / "forecourt")
PEPPER = "call-path-bench-pepper-0123456789ab"
DEALER = "demo-toyota-sf"


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


def _body(call_id: int) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": call_id,
            "method": "tools/call",
            "params": {
                "name": "inventory.search",
                "arguments": {"dealership_id": DEALER, "limit": 20},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    ).encode()


def _headers(token: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "inventory.search",
        "Authorization": f"Bearer {token}",
    }


def _package(filename: str) -> str:
    rel = os.path.relpath(filename, SRC)
    return rel.split(os.sep)[0] if os.sep in rel else rel


async def _trace_one(client: httpx.AsyncClient, token: str) -> dict[str, Any]:
    entered: list[str] = []

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(SRC):
            entered.append(frame.f_code.co_filename)

    sys.setprofile(profiler)
    try:
        response = await client.post("/mcp", content=_body(0), headers=_headers(token))
    finally:
        sys.setprofile(None)
    assert response.status_code == 200, response.text[:300]
    return _summary(entered)


def _summary(entered: list[str]) -> dict[str, Any]:
    files = sorted({os.path.relpath(f, SRC) for f in entered})
    crossings = 0
    previous = ""
    for filename in entered:
        package = _package(filename)
        if package in ("surfaces", "adapters") and previous in ("surfaces", "adapters") and package != previous:
            crossings += 1
        if package in ("surfaces", "adapters"):
            previous = package
    return {
        "files_entered": len(files),
        "by_package": dict(Counter(_package(os.path.join(SRC, f)) for f in files)),
        "surfaces_adapters_crossings": crossings,
        "files": files,
    }


async def main(args: argparse.Namespace) -> None:
    from forecourt.bootstrap import create_app
    from forecourt.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/bench.db"
        token = await _prepare(url)
        settings = Settings(
            database_url=url,
            api_key_pepper=PEPPER,
            cache_enabled=args.cache,
            log_level="WARNING",
            rate_company_per_minute=10**9,
            rate_member_per_minute=10**9,
            rate_action_per_minute=10**9,
            public_base_url="http://bench.test",
        )
        app = create_app(settings)
        transport = httpx.ASGITransport(app=app)
        client = httpx.AsyncClient(transport=transport, base_url="http://bench.test")
        async with app.router.lifespan_context(app), client:
            for i in range(50):  # warm caches (authentication, tenancy, compiled statements)
                await client.post("/mcp", content=_body(i), headers=_headers(token))
            path = await _trace_one(client, token)
            profile = cProfile.Profile() if args.profile else None
            started_cpu, started = time.process_time(), time.perf_counter()
            if profile is not None:
                profile.enable()
            for i in range(args.calls):
                response = await client.post("/mcp", content=_body(i), headers=_headers(token))
                if response.status_code != 200:
                    raise RuntimeError(response.text[:300])
            if profile is not None:
                profile.disable()
            cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started
            if profile is not None:
                pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(args.profile_rows)
    out = {
        "calls": args.calls,
        "cpu_ms_per_call": round(1000 * cpu / args.calls, 3),
        "wall_ms_per_call": round(1000 * wall / args.calls, 3),
        **{k: v for k, v in path.items() if args.files or k != "files"},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", action="store_true", help="the gateway's result cache on (every call a hit)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions (to stderr)")
    parser.add_argument("--profile-rows", type=int, default=40)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--files", action="store_true", help="also list every module entered")
    asyncio.run(main(parser.parse_args()))
