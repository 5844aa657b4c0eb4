"""Benchmark: A2A ``SendMessage`` ``inventory.search`` over JSON-RPC against a served Forecourt.

Three processes: this orchestrator, the server (``uvicorn`` via ``forecourt.cli.serve.app_factory`` on a
demo SQLite database) and a separate load generator (``--load`` mode) with N concurrent keep-alive
connections. Prints throughput and latency percentiles; not a test, no assertions.

    .venv/bin/python bench/a2a_search_bench.py --seconds 20 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEALER = "demo-toyota-sf"
BODY = {
    "jsonrpc": "2.0",
    "id": "b",
    "method": "SendMessage",
    "params": {
        "message": {
            "messageId": "bench",
            "role": "ROLE_USER",
            "parts": [
                {
                    "data": {
                        "type": "inventory.search.request",
                        "filters": {"condition": ["used"]},
                        "pagination": {"skip": 0, "limit": 10},
                        "sort": {"field": "price", "order": "asc"},
                    },
                    "mediaType": "application/vnd.autoagent.inventory-search-request+json",
                }
            ],
        },
        "configuration": {"acceptedOutputModes": ["application/vnd.autoagent.inventory-search-response+json"]},
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _prepare(url: str, vehicles: int) -> None:
    from datetime import UTC, datetime

    from forecourt.demo import load_demo
    from forecourt.store import open_store_url, upgrade_async

    await upgrade_async(url)
    store = open_store_url(url)
    try:
        await load_demo(store, vehicles_per_dealership=vehicles, now=datetime.now(UTC))
    finally:
        await store.close()


async def _load(url: str, seconds: float, concurrency: int) -> dict[str, Any]:
    import httpx

    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30, headers={"A2A-Version": "1.0"}) as client:
        await client.post(url, json=BODY)  # warm-up

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                response = await client.post(url, json=BODY)
                elapsed = time.perf_counter() - start
                if response.status_code != 200 or "result" not in response.json():
                    errors += 1
                latencies.append(elapsed)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    latencies.sort()
    pick = lambda q: latencies[min(int(q * len(latencies)), len(latencies) - 1)] * 1000  # noqa: E731
    return {
        "requests": len(latencies),
        "errors": errors,
        "seconds": round(wall, 2),
        "throughput_rps": round(len(latencies) / wall, 1),
        "p50_ms": round(pick(0.50), 2),
        "p90_ms": round(pick(0.90), 2),
        "p99_ms": round(pick(0.99), 2),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2),
        "concurrency": concurrency,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--vehicles", type=int, default=200, help="vehicles per demo dealership")
    parser.add_argument("--database-url", help="an empty database to use (default: a temporary SQLite file)")
    parser.add_argument("--load", metavar="URL", help="(internal) run as the load generator against URL")
    args = parser.parse_args()
    if args.load:
        print(json.dumps(asyncio.run(_load(args.load, args.seconds, args.concurrency))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db_url = args.database_url or f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        asyncio.run(_prepare(db_url, args.vehicles))
        port = _free_port()
        env = {
            **os.environ,
            "FORECOURT_DATABASE_URL": db_url,
            "FORECOURT_LOG_LEVEL": "WARNING",
            "FORECOURT_RATE_ANONYMOUS_PER_MINUTE": "100000000",
        }
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "forecourt.cli.serve:app_factory",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
                "--no-access-log",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(Path(tmp) / "server.log").open("w"),
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            url = f"http://127.0.0.1:{port}/dealers/{DEALER}/a2a/jsonrpc"
            load = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--load",
                    url,
                    "--seconds",
                    str(args.seconds),
                    "--concurrency",
                    str(args.concurrency),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(load.stdout.strip().splitlines()[-1])
            result.update(vehicles_per_dealership=args.vehicles, cpus=os.cpu_count(), database=db_url.split(":")[0])
            print(json.dumps(result, indent=2))
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
