"""The load generator of bench/mixed.py: the seeded mix over keep-alive connections, closed or open loop.

bench/mixed.py runs it as a process of its own (``--load``), so its CPU is not the orchestrator's: one JSON line per
reporting window on stdout, then ``{"final": ...}`` with the latencies and errors per action and door.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import soak
from mixed_calls import Call, Traffic, rooftops_from, verdict, wire


def _pick(ordered: list[float], q: float) -> float:
    return round(ordered[min(int(q * len(ordered)), len(ordered) - 1)], 2)


def latency_summary(ms: list[float]) -> dict[str, float]:
    """p50/p95/p99/max of latencies in milliseconds (empty: {})."""
    if not ms:
        return {}
    ordered = sorted(ms)
    return {
        "p50_ms": _pick(ordered, 0.5),
        "p95_ms": _pick(ordered, 0.95),
        "p99_ms": _pick(ordered, 0.99),
        "max_ms": round(ordered[-1], 2),
    }


@dataclass
class Tally:
    """Latencies and errors by ``action|door``, and the current reporting window's."""

    lat: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    first_errors: dict[str, list[str]] = field(default_factory=dict)
    skipped: int = 0
    lags: list[float] = field(default_factory=list)
    window: list[float] = field(default_factory=list)
    window_errors: int = 0
    window_skipped: int = 0

    def add(self, call: Call, ms: float, ok: bool, why: str) -> None:
        key = f"{call.action}|{call.door}"
        self.lat.setdefault(key, []).append(ms)
        self.window.append(ms)
        if not ok:
            self.errors[key] = self.errors.get(key, 0) + 1
            self.window_errors += 1
            seen = self.first_errors.setdefault(key, [])
            if len(seen) < 3:
                seen.append(why)

    def flush_window(self, at: float, seconds: float) -> dict[str, Any]:
        line = {
            "t": round(at, 1),
            "requests": len(self.window),
            "errors": self.window_errors,
            "skipped": self.window_skipped,
            "rps": round(len(self.window) / seconds, 1),
            **latency_summary(self.window),
        }
        self.window, self.window_errors, self.window_skipped = [], 0, 0
        return line

    def final(self, seconds: float) -> dict[str, Any]:
        every = [x for values in self.lat.values() for x in values]
        errors = sum(self.errors.values())
        by_key = {
            key: {
                "count": len(values),
                "errors": self.errors.get(key, 0),
                "rps": round(len(values) / seconds, 2),
                **latency_summary(values),
                **({"first_errors": self.first_errors[key]} if key in self.first_errors else {}),
            }
            for key, values in sorted(self.lat.items())
        }
        lag = latency_summary(self.lags)
        return {
            "seconds": round(seconds, 1),
            "requests": len(every),
            "errors": errors,
            "skipped": self.skipped,
            "rps": round(len(every) / seconds, 1),
            **latency_summary(every),
            "send_lag_ms": {k.removesuffix("_ms"): v for k, v in lag.items()},
            "by_key": by_key,
        }


def _emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


class Loader:
    """Sends the mix over keep-alive connections (bench/soak.py's client) and tallies the answers."""

    def __init__(self, base: str, token: str, traffic: Traffic, connections: int) -> None:
        self.host_port = base.split("://", 1)[1].rstrip("/")
        host, _, port = self.host_port.partition(":")
        self.idle = [soak._Conn(host, int(port or 80)) for _ in range(connections)]
        self.token, self.traffic = token, traffic
        self.tally = Tally()
        self.count_from = 0.0
        self.sent = 0

    def _bytes(self, call: Call) -> bytes:
        self.sent += 1
        path, headers, body = wire(call, self.token, f"{self.traffic.tag}-{self.sent}")
        payload = json.dumps(body, separators=(",", ":")).encode()
        head = [f"POST {path} HTTP/1.1", f"Host: {self.host_port}", "Content-Type: application/json"]
        head += [f"{k}: {v}" for k, v in headers.items()] + [f"Content-Length: {len(payload)}"]
        return ("\r\n".join(head) + "\r\n\r\n").encode() + payload

    async def one(self, conn: soak._Conn, call: Call) -> None:
        """Send ``call`` on ``conn`` and tally the answer (when it started after the warm-up)."""
        request = self._bytes(call)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(10):
                status, content = await conn.post(request)
            ok, data, why = verdict(call, status, content)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            ok, data, why = False, None, type(exc).__name__
        elapsed = (time.perf_counter() - started) * 1000
        if ok:
            self.traffic.answered(call, data)
        if started >= self.count_from:
            self.tally.add(call, elapsed, ok, why)

    async def _returning(self, conn: soak._Conn, call: Call) -> None:
        try:
            await self.one(conn, call)
        finally:
            self.idle.append(conn)

    async def report(self, t0: float, window: float) -> None:
        """Print the window's line every ``window`` seconds (cancelled at the end)."""
        at = t0 + window
        while True:
            await asyncio.sleep(max(0.0, at - time.perf_counter()))
            _emit(self.tally.flush_window(at - t0, window))
            at += window

    async def closed(self, warmup: float, seconds: float) -> float:
        """Every connection sends its next call as soon as the last is answered; returns the measured seconds."""
        end = time.perf_counter() + warmup + seconds
        self.count_from = end - seconds

        async def worker(conn: soak._Conn) -> None:
            while time.perf_counter() < end:
                await self.one(conn, self.traffic.next_call())

        await asyncio.gather(*(worker(c) for c in self.idle))
        return time.perf_counter() - self.count_from

    async def open(self, rate: float, seconds: float) -> float:
        """Call *i* at ``t0 + i / rate`` on an idle connection, whatever the latency of earlier ones."""
        tasks: set[asyncio.Task[None]] = set()
        t0 = self.count_from = time.perf_counter()
        i = 0
        while (now := time.perf_counter()) < t0 + seconds:
            due = int((now - t0) * rate) + 1 - i
            if due <= 0:
                await asyncio.sleep(t0 + i / rate - now)
                continue
            for _ in range(due):
                self.tally.lags.append((now - (t0 + i / rate)) * 1000)
                i += 1
                if not self.idle:
                    self.tally.skipped += 1
                    self.tally.window_skipped += 1
                    continue
                task = asyncio.create_task(self._returning(self.idle.pop(), self.traffic.next_call()))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            await asyncio.sleep(0)
        if tasks:
            await asyncio.wait(tasks, timeout=15)
        return time.perf_counter() - t0


async def load_main(args: argparse.Namespace) -> None:
    """The load-generator process: one JSON line per window, then ``{"final": ...}``."""
    traffic = Traffic(rooftops_from(args.world_data), seed=args.seed, tag=args.tag)
    token = os.environ["MIXED_TRAFFIC_TOKEN"]
    cpu_start = time.process_time()
    if args.mode == "closed":
        loader = Loader(args.load, token, traffic, args.connections)
        reporter = asyncio.create_task(loader.report(time.perf_counter() + args.warmup, args.window))
        seconds = await loader.closed(args.warmup, args.seconds)
    else:
        loader = Loader(args.load, token, traffic, args.max_in_flight)
        reporter = asyncio.create_task(loader.report(time.perf_counter(), args.window))
        seconds = await loader.open(args.rate, args.seconds)
    reporter.cancel()
    for conn in loader.idle:
        conn.close()
    _emit({"final": {**loader.tally.final(seconds), "client_cpu_s": round(time.process_time() - cpu_start, 2)}})
