"""Soak: one front door at a fixed request rate for a long time; errors and worker RSS over time.

The orchestrator prepares a database (SQLite file, or PostgreSQL database ``forecourt_bench_frontdoors`` +
Redis, as bench/frontdoors.py does), starts ``forecourt serve --workers N`` and a separate load-generator
process (``--load`` mode: asyncio streams on uvloop, keep-alive connections, open loop — request *i* is sent
at ``t0 + i / rate`` whatever the latency of earlier ones, at most ``--max-in-flight`` outstanding), and samples
``VmRSS``/``VmHWM`` of every worker every ``--sample`` seconds. It prints one line per window and a JSON
summary: requests, errors (any non-200 or error answer, timeouts, or sends that could not be scheduled because
too many were in flight), latency percentiles, and RSS per worker at start/end with the least-squares slope
over the run after the first ``--settle`` seconds (flat memory = a slope of ~0 MB/min).

    .venv/bin/python bench/soak.py --door mcp --rate 200 --seconds 600 --workers 2 --db sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import frontdoors as fd

A2A_BODY = {
    "jsonrpc": "2.0",
    "id": "soak",
    "method": "SendMessage",
    "params": {
        "message": {
            "messageId": "soak",
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


def request_for(door: str, token: str) -> tuple[str, dict[str, str], bytes, bytes]:
    """(path, headers, body, marker a good answer contains) of one request to ``door``."""
    auth = {"Authorization": f"Bearer {token}"}
    if door == "mcp":
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "inventory.search",
                "arguments": {"dealership_id": fd.DEALER, "limit": 10},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        headers = {
            **auth,
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "inventory.search",
        }
        return "/mcp", headers, json.dumps(body).encode(), b'"vin"'
    if door == "a2a":
        return f"/dealers/{fd.DEALER}/a2a/jsonrpc", {"A2A-Version": "1.0"}, json.dumps(A2A_BODY).encode(), b'"result"'
    body = {"id": "soak", "payload": {"dealership_id": fd.DEALER, "limit": 10}}
    return "/mcp/inventory.search", auth, json.dumps(body).encode(), b'"vin"'


# ---------------------------------------------------------------------------------------------- load generator


def _good(status: int, content: bytes, marker: bytes) -> bool:
    return status == 200 and marker in content and b'"isError":true' not in content and b'"error":{' not in content


class _Conn:
    """One keep-alive HTTP/1.1 connection that sends a prepared request and reads one answer at a time."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, request: bytes) -> tuple[int, bytes]:
        """Send ``request`` and read its answer; a kept-alive connection the server had closed is opened again
        and the request sent once more (nothing of an answer had arrived), as HTTP clients do."""
        reused = self.writer is not None
        try:
            return await self._exchange(request)
        except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError) as exc:
            partial = getattr(exc, "partial", b"")
            if not reused or partial:
                raise
            return await self._exchange(request)

    async def _exchange(self, request: bytes) -> tuple[int, bytes]:
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        try:
            self.writer.write(request)
            head = await self.reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            length = 0
            close = False
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value.strip())
                elif name == "connection" and value.strip().lower() == "close":
                    close = True
            content = await self.reader.readexactly(length) if length else b""
        except BaseException:
            self.close()
            raise
        if close:
            self.close()
        return status, content

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def _one(conn: _Conn, request: bytes, marker: bytes, stats: dict[str, Any], idle: list[_Conn]) -> None:
    """One request on ``conn``, counted in ``stats``; the connection goes back to ``idle``."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(10):
            status, content = await conn.post(request)
        ok = _good(status, content, marker)
        if not ok and stats["first_error"] is None:
            stats["first_error"] = f"{status} {content[:200]!r}"
    except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
        ok = False
        if stats["first_error"] is None:
            stats["first_error"] = type(exc).__name__
    finally:
        idle.append(conn)
    stats["lat"].append(time.perf_counter() - started)
    if not ok:
        stats["errors"] += 1


async def load(
    base: str, door: str, token: str, rate: float, seconds: float, window: float, max_in_flight: int
) -> None:
    """Open-loop load; prints one JSON line per window and a final ``{"final": ...}`` line.

    Request *i* is sent at ``t0 + i / rate`` on an idle keep-alive connection (at most ``max_in_flight``; a
    request due while every connection is busy is counted as skipped, an error). The client is plain asyncio
    streams on uvloop with the request bytes built once, so one process sustains well over 1,000 req/s.
    """
    path, headers, body, marker = request_for(door, token)
    host_port = base.split("://", 1)[1].rstrip("/")
    host, _, port = host_port.partition(":")
    head = [f"POST {path} HTTP/1.1", f"Host: {host_port}", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()] + [f"Content-Length: {len(body)}"]
    request = ("\r\n".join(head) + "\r\n\r\n").encode() + body
    stats: dict[str, Any] = {"lat": [], "errors": 0, "skipped": 0, "first_error": None}
    idle = [_Conn(host, int(port or 80)) for _ in range(max_in_flight)]

    totals: dict[str, Any] = {"requests": 0, "errors": 0, "skipped": 0, "lat": []}
    tasks: set[asyncio.Task[None]] = set()
    t0 = time.perf_counter()
    next_window = t0 + window
    i = 0
    while (now := time.perf_counter()) < t0 + seconds:
        if now >= next_window:
            _report(stats, totals, round(next_window - t0, 1))
            next_window += window
            continue
        due_count = int((now - t0) * rate) + 1 - i  # every request due by now goes out in this turn
        if due_count <= 0:
            await asyncio.sleep(min(t0 + i / rate - now, next_window - now))
            continue
        for _ in range(due_count):
            i += 1
            if not idle:
                stats["skipped"] += 1
                continue
            task = asyncio.create_task(_one(idle.pop(), request, marker, stats, idle))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.sleep(0)
    if tasks:
        await asyncio.wait(tasks, timeout=15)
    _report(stats, totals, round(time.perf_counter() - t0, 1))
    for conn in idle:
        conn.close()
    _final(totals, seconds)


def _final(totals: dict[str, Any], seconds: float) -> None:
    lat = sorted(totals["lat"])
    summary = {
        "requests": totals["requests"],
        "errors": totals["errors"],
        "skipped": totals["skipped"],
        "achieved_rps": round(totals["requests"] / seconds, 1),
        **_percentiles(lat),
    }
    print(json.dumps({"final": summary}), flush=True)


def _percentiles(lat: list[float]) -> dict[str, float]:
    if not lat:
        return {}

    def pick(q: float) -> float:
        return round(lat[min(int(q * len(lat)), len(lat) - 1)] * 1000, 2)

    return {"p50_ms": pick(0.5), "p95_ms": pick(0.95), "p99_ms": pick(0.99), "max_ms": round(lat[-1] * 1000, 2)}


def _report(stats: dict[str, Any], totals: dict[str, Any], at: float) -> None:
    lat = sorted(stats["lat"])
    line = {"t": at, "requests": len(lat), "errors": stats["errors"], "skipped": stats["skipped"], **_percentiles(lat)}
    if stats["first_error"]:
        line["first_error"] = stats["first_error"]
    print(json.dumps(line), flush=True)
    totals["requests"] += len(lat)
    totals["errors"] += stats["errors"]
    totals["skipped"] += stats["skipped"]
    totals["lat"] += lat
    stats.update(lat=[], errors=0, skipped=0, first_error=None)


# ---------------------------------------------------------------------------------------------- orchestrator


def slope_mb_per_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in points)
    return round(60 * sxy / sxx, 3) if sxx else 0.0


def run(args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    """Prepare, serve, load and sample; returns the summary."""
    if args.db == "postgres":
        db_url, redis_url = asyncio.run(fd.create_pg(args.pg_admin)), args.redis
        fd.clear_redis(redis_url)
    else:
        db_url, redis_url = f"sqlite+aiosqlite:///{Path(tmp) / 'soak.db'}", None
    try:
        token = asyncio.run(fd.prepare(db_url))
        port = fd.free_port()
        server = fd.Server(
            fd.server_env(db_url, port, redis_url, args.experiment),
            args.workers,
            Path(args.log_dir) / "soak-server.log",
        )
        try:
            pids = server.wait_ready()
            return _drive(args, port, token, pids)
        finally:
            server.stop()
    finally:
        if args.db == "postgres":
            asyncio.run(fd.drop_pg(args.pg_admin))
            fd.clear_redis(args.redis)


def _drive(args: argparse.Namespace, port: int, token: str, pids: list[int]) -> dict[str, Any]:
    samples: dict[int, list[tuple[float, float]]] = {p: [] for p in pids}
    stop = threading.Event()
    t0 = time.monotonic()

    def sampler() -> None:
        while not stop.is_set():
            for p in pids:
                samples[p].append((time.monotonic() - t0, fd.vm_kib(p, "VmRSS") / 1024))
            stop.wait(args.sample)

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    loader = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--load",
            f"http://127.0.0.1:{port}",
            "--door",
            args.door,
            "--token",
            token,
            "--rate",
            str(args.rate),
            "--seconds",
            str(args.seconds),
            "--window",
            str(args.window),
            "--max-in-flight",
            str(args.max_in_flight),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    final: dict[str, Any] = {}
    windows = []
    assert loader.stdout is not None
    for line in loader.stdout:
        record = json.loads(line)
        if "final" in record:
            final = record["final"]
            continue
        rss = [round(samples[p][-1][1], 1) if samples[p] else 0.0 for p in pids]
        record["rss_mb"] = rss
        windows.append(record)
        print(json.dumps(record), file=sys.stderr, flush=True)
    loader.wait()
    stop.set()
    thread.join()
    workers = []
    for p in pids:
        settled = [s for s in samples[p] if s[0] >= args.settle]
        workers.append(
            {
                "pid": p,
                "rss_start_mb": round(samples[p][0][1], 1) if samples[p] else None,
                "rss_after_settle_mb": round(settled[0][1], 1) if settled else None,
                "rss_end_mb": round(samples[p][-1][1], 1) if samples[p] else None,
                "peak_rss_mb": round(fd.vm_kib(p, "VmHWM") / 1024, 1),
                "rss_slope_mb_per_min_after_settle": slope_mb_per_min(settled),
            }
        )
    return {
        "door": args.door,
        "db": args.db,
        "workers": args.workers,
        "rate": args.rate,
        "seconds": args.seconds,
        "load": final,
        "worker_rss": workers,
        "windows": windows,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--door", default="mcp", choices=fd.DOORS)
    parser.add_argument("--rate", type=float, default=200, help="requests per second (open loop)")
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--db", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--window", type=float, default=30, help="seconds per reported window")
    parser.add_argument("--sample", type=float, default=5, help="seconds between RSS samples")
    parser.add_argument("--settle", type=float, default=60, help="seconds excluded from the RSS slope")
    parser.add_argument("--max-in-flight", type=int, default=64)
    parser.add_argument("--pg-admin", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--log-dir", default=None)
    parser.add_argument("--experiment", nargs="*", default=[], help="bench/experiments patches for the server")
    parser.add_argument("--load", metavar="BASE_URL", help="(internal) run as the load generator")
    parser.add_argument("--token", default="", help="(internal) API key for the load generator")
    args = parser.parse_args()
    if args.load:
        import uvloop

        uvloop.run(load(args.load, args.door, args.token, args.rate, args.seconds, args.window, args.max_in_flight))
        return
    with tempfile.TemporaryDirectory() as tmp:
        args.log_dir = args.log_dir or tmp
        summary = run(args, tmp)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
