"""What each in-process cache earns: CPU per call on the fair and mixed workloads, with each cache on and off.

Runs the real app in process (``create_app``: access log and metrics, the guard, API-key authentication, the MCP
direct path and the REST envelope, the gateway with policy, rate limits, the result cache and the audit journal)
on the bulk data set of ``../shared/peers/fair.sh`` (50 rooftops x 2,000 vehicles, ``forecourt demo --bulk``),
through ASGI calls without sockets, ``--concurrency`` in flight:

- ``fair``: fair.sh's call: MCP ``tools/call inventory.search`` of the 20 cheapest, compact view, the 50
  rooftops in turn, the result cache off.
- ``mixed``: what varied traffic looks like: 5,000 distinct requests drawn Zipf-like (s = 1: a few popular,
  a long tail), over rooftops drawn Zipf-like too (s = 0.8). 60 % MCP ``inventory.search`` with 0-3 filters
  (make, model, body, price, year, condition), a sort, a page size and a view; 15 % ``inventory.get`` of a
  vehicle; 10 % the AAP ``aap.inventory.search`` skill on the REST envelope; 10 % ``inventory.facets``; 5 %
  ``dealer.information``. The result cache on (the default).

``--each`` measures every cache of ``forecourt.caching`` seen on the workload: for each, ``--rounds`` runs with
everything on alternating with as many with it disabled (``caching.disable``: it misses every time and keeps
nothing), each after a warm-up. Every run takes the next requests of the workload (mixed: new draws, as traffic
brings them, not the ones a previous run made every cache remember). It prints per cache its hit rate with
everything on and the median CPU per call (of the event loop's thread) with it off over the median with it on
(> 1: the cache saves).

``--costs`` runs the workload one call at a time, counting each cache's lookups and hits, then again with every
cache timing its misses (``caching.time_misses``: the CPU from the miss to the put of the value it lacked), a
``--sample`` share of its hits answered as misses too, so that caches that always hit are timed in a warm process. It
prints per cache: lookups and hit rate per call, the median cost of a miss, and the CPU a call saves by its hits
(hits per call x (median miss cost - a hit's cost - the timer's own)), beside the CPU of a whole call. On a busy
machine these medians hold still where end-to-end ratios do not.

    .venv/bin/python bench/cache_earnings.py --db /tmp/fcb/fc.db --workload fair --costs
    .venv/bin/python bench/cache_earnings.py --db /tmp/fcb/fc.db --workload mixed --each --rounds 5
    .venv/bin/python bench/cache_earnings.py --db /tmp/fcb/fc.db --workload fair --wall --calls 3000

``--wall`` prints, per window, the wall time and the loop thread's CPU per call and the share of the wall it was busy.
``FORECOURT_CACHE_ENABLED`` and the other ``FORECOURT_*`` settings in the environment apply (the fair workload runs
with the result cache off unless ``FORECOURT_CACHE_ENABLED=true`` is set).

Without ``--db`` the data set is generated first in a temporary folder (about a minute and a half); ``--url`` runs
on another database (PostgreSQL: ``postgresql+asyncpg://...``, the fair workload only), generated there once. Pin it
(``taskset -c 0``): this machine is noisy; compare only numbers of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from itertools import accumulate, count, islice
from pathlib import Path
from typing import Any

DEALERS = [f"bench-{n:04d}" for n in range(1, 51)]
PEPPER = "bench-pepper-0123456789abcdef"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
MAKES = {"Toyota": ["RAV4", "Camry", "Corolla", "Tacoma"], "Honda": ["Civic", "CR-V", "Accord", "Pilot"]}
BODIES = ["sedan", "suv", "pickup", "minivan", "hatchback"]
SORTS = ["price", "year", "mileage", "msrp", "last_verified_at"]

Request = tuple[str, str, bytes]  # door ("mcp" | "rest"), action, body


def _cli(*args: str) -> str:
    forecourt = str(Path(sys.executable).with_name("forecourt"))
    return subprocess.run([forecourt, *args], check=True, capture_output=True, text=True).stdout


def _prepare(db: Path, url: str | None) -> str:
    """The bulk data set in ``db`` or at ``url`` (generated when missing) and a new key for its bench agent."""
    os.environ["FORECOURT_DATABASE_URL"] = url or f"sqlite+aiosqlite:///{db}"
    fresh = url is None and not db.exists()  # before `db upgrade`, which creates the file
    if url is not None or fresh:
        _cli("db", "upgrade")
    if (url is not None and "bench-motor-group" not in _cli("companies", "list")) or fresh:
        _cli("demo", "--bulk", "--dealerships", "50", "--vehicles", "2000")
    made = _cli("keys", "create", "--company", "bench-motor-group", "--member", "bench-agent", "--json")
    return str(json.loads(made)["key"])


def _mcp(call_id: int, action: str, arguments: dict[str, Any]) -> Request:
    params = {"name": action, "arguments": arguments, "_meta": META}
    body = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}
    return "mcp", action, json.dumps(body).encode()


def _rest(action: str, payload: dict[str, Any]) -> Request:
    return "rest", action, json.dumps({"payload": payload}).encode()


def _search_args(rng: random.Random, dealer: str) -> dict[str, Any]:
    args: dict[str, Any] = {"dealership_id": dealer}
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
        kind = rng.choice(("make", "model", "body", "price_max", "year_min", "condition"))
        if kind == "make":
            args["make"] = [rng.choice(list(MAKES))]
        elif kind == "model":
            make = rng.choice(list(MAKES))
            args["make"], args["model"] = [make], [rng.choice(MAKES[make])]
        elif kind == "body":
            args["body"] = [rng.choice(BODIES)]
        elif kind == "price_max":
            args["price_max"] = rng.randrange(15_000, 60_000, 2_500) * 100
        elif kind == "year_min":
            args["year_min"] = rng.randrange(2016, 2026)
        else:
            args["condition"] = [rng.choice(("new", "used"))]
    args["sort"] = {"field": rng.choice(SORTS), "order": rng.choice(("asc", "desc"))}
    args["limit"] = rng.choice((10, 20, 20, 50))
    args["view"] = rng.choice(("compact", "compact", "full"))
    return args


def _mixed_request(rng: random.Random, n: int, dealer: str, vehicles: dict[str, list[str]]) -> Request:
    pick = rng.random()
    if pick < 0.60:
        return _mcp(n, "inventory.search", _search_args(rng, dealer))
    if pick < 0.75:
        return _mcp(n, "inventory.get", {"dealership_id": dealer, "vehicle_id": rng.choice(vehicles[dealer])})
    if pick < 0.85:
        args = _search_args(rng, dealer)
        filters = {k: args[k] for k in ("make", "model", "body", "condition") if k in args}
        payload = {
            "dealership_id": dealer,
            "type": "inventory.search.request",
            "filters": filters,
            "pagination": {"skip": 0, "limit": args["limit"]},
            "sort": {"field": args["sort"]["field"], "order": args["sort"]["order"]},
        }
        return _rest("aap.inventory.search", payload)
    if pick < 0.95:
        args = {k: v for k, v in _search_args(rng, dealer).items() if k not in ("sort", "limit", "view")}
        return _mcp(n, "inventory.facets", args)
    return _mcp(n, "dealer.information", {"dealership_id": dealer})


def _zipf_weights(n: int, s: float = 1.0) -> list[float]:
    return list(accumulate(1 / (k**s) for k in range(1, n + 1)))


class Stream:
    """A workload's requests, one after another: every run takes the next ones (mixed: a run meets new requests as
    real traffic does, not the ones the previous run made every cache remember)."""

    def __init__(self, name: str, db: Path, seed: int = 7) -> None:
        self._requests = _fair() if name == "fair" else _mixed(db, seed)

    def take(self, calls: int) -> list[Request]:
        """The next ``calls`` requests."""
        return list(islice(self._requests, calls))


def _fair() -> Iterator[Request]:
    args = {"sort": {"field": "price"}, "limit": 20, "view": "compact"}
    for i in count():
        yield _mcp(i, "inventory.search", {"dealership_id": DEALERS[i % 50], **args})


def _mixed(db: Path, seed: int) -> Iterator[Request]:
    rng = random.Random(seed)
    with sqlite3.connect(db) as conn:
        vehicles: dict[str, list[str]] = {d: [] for d in DEALERS}
        for dealer, vid in conn.execute("select dealership_id, id from vehicles where status = 'available'"):
            if dealer in vehicles and len(vehicles[dealer]) < 400:
                vehicles[dealer].append(vid)
    dealer_weights = _zipf_weights(len(DEALERS), 0.8)
    distinct = [
        _mixed_request(rng, n, rng.choices(DEALERS, cum_weights=dealer_weights)[0], vehicles) for n in range(5000)
    ]
    weights = _zipf_weights(len(distinct))
    while True:
        yield from rng.choices(distinct, cum_weights=weights, k=1000)


class App:
    """The app in process, and ASGI calls into it."""

    def __init__(self, key: str) -> None:
        from forecourt.bootstrap import create_app
        from forecourt.settings import Settings

        self.app = create_app(Settings())
        self.key = key.encode()
        self.statuses: dict[int, int] = {}

    async def start(self) -> None:
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        await self._inbox.put({"type": "lifespan.startup"})
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._lifespan = asyncio.create_task(self.app(scope, self._inbox.get, self._outbox.put))
        started = await self._outbox.get()
        if started["type"] != "lifespan.startup.complete":
            raise SystemExit(f"the app did not start: {started}")

    async def stop(self) -> None:
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._lifespan

    async def call(self, request: Request) -> None:
        door, action, body = request
        path = "/mcp" if door == "mcp" else f"/mcp/{action}"
        headers = [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"authorization", b"Bearer " + self.key),
            (b"content-length", str(len(body)).encode()),
        ]
        if door == "mcp":
            headers += [
                (b"accept", b"application/json, text/event-stream"),
                (b"mcp-protocol-version", b"2026-07-28"),
                (b"mcp-method", b"tools/call"),
                (b"mcp-name", action.encode()),
            ]
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 8000), "state": {}, "extensions": {},
        }  # fmt: skip

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.statuses[message["status"]] = self.statuses.get(message["status"], 0) + 1

        await self.app(scope, receive, send)

    async def run(self, requests: list[Request], concurrency: int) -> float:
        """CPU seconds per call of the event loop's thread over ``requests``.

        The loop's thread runs every request (the SQLite reads too, inline); the audit writer's batches and the
        journal's helper process are left out: they come in bursts that land in one window or the next.
        """
        queue = iter(requests)

        async def worker() -> None:
            for request in queue:
                await self.call(request)

        cpu = time.thread_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return (time.thread_time() - cpu) / len(requests)


def _counts() -> dict[str, tuple[int, int]]:
    from forecourt import caching

    return {i.name: (i.hits, i.misses) for i in caching.snapshot()}


def _rates(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, (hits, misses) in after.items():
        h, m = hits - before.get(name, (0, 0))[0], misses - before.get(name, (0, 0))[1]
        if h + m:
            out[name] = {"lookups": h + m, "hit_rate": round(h / (h + m), 3)}
    return out


def _hit_cost() -> float:
    """Seconds one hit of a cache costs (the least of several timings)."""
    from forecourt import caching

    cache: caching.Cache[str, int] = caching.lru("bench.hit_cost", 4)
    cache.put("k", 1)
    runs = []
    for _ in range(7):
        started = time.perf_counter()
        for _ in range(10_000):
            cache.get("k")
        runs.append((time.perf_counter() - started) / 10_000)
    return min(runs)


def _timer_floor() -> float:
    """CPU seconds a timed miss reads when nothing is computed between the miss and the put (the timer's own)."""
    from forecourt import caching

    cache: caching.Cache[int, int] = caching.lru("bench.timer_floor", 4096)
    cache._time(True, 0.0)
    for key in range(4096):
        cache.get(key)
        cache.put(key, key)
    floor = statistics.median(caching.miss_costs()["bench.timer_floor"])
    cache._time(False, 0.0)
    return floor


async def _costs(app: App, stream: Stream, options: argparse.Namespace) -> dict[str, Any]:
    from forecourt import caching

    windows = [await app.run(stream.take(200), 1) for _ in range(max(options.calls // 200, 1))]
    call_us = statistics.median(windows) * 1e6
    hit_us = _hit_cost() * 1e6 + _timer_floor() * 1e6  # a hit's cost, and what the timer adds to each miss
    before = _counts()
    await app.run(stream.take(options.calls), 1)
    after = _counts()
    caching.time_misses(True, sample=options.sample)
    try:
        await app.run(stream.take(options.calls), 1)
        costs = caching.miss_costs()
    finally:
        caching.time_misses(False)
    out: dict[str, Any] = {"call_cpu_us": round(call_us, 1), "hit_and_timer_us": round(hit_us, 2), "caches": {}}
    for name, (hits, misses) in sorted(after.items()):
        h, m = hits - before.get(name, (0, 0))[0], misses - before.get(name, (0, 0))[1]
        if not h + m or name.startswith("bench."):
            continue
        miss_us = statistics.median(costs[name]) * 1e6 if name in costs else None
        saved = h / options.calls * (miss_us - hit_us) if miss_us is not None else None
        out["caches"][name] = {
            "lookups_per_call": round((h + m) / options.calls, 2),
            "hit_rate": round(h / (h + m), 3),
            "miss_us": None if miss_us is None else round(miss_us, 1),
            "saved_us_per_call": None if saved is None else round(saved, 1),
            "saved_share": None if saved is None else round(saved / call_us, 4),
        }
    return out


async def _measure(options: argparse.Namespace, key: str) -> dict[str, Any]:
    from forecourt import caching

    stream = Stream(options.workload, options.db)
    app = App(key)
    await app.start()
    try:
        await app.run(stream.take(options.warm), options.concurrency)
        if options.costs:
            return {"workload": options.workload, "calls": options.calls, **await _costs(app, stream, options)}
        if options.wall:
            return {"workload": options.workload, "calls": options.calls, "windows": await _wall(app, stream, options)}
        before = _counts()
        base = await app.run(stream.take(options.calls), options.concurrency)
        rates = _rates(before, _counts())
        report: dict[str, Any] = {"workload": options.workload, "calls": options.calls}
        report["cpu_us_per_call"] = round(base * 1e6, 1)
        report["caches"] = rates
        if options.each:
            names = [n for n in options.only.split(",") if n] or sorted(rates)
            report["gain"] = await _each(app, stream, options, names)
        report["statuses"] = app.statuses
        return report
    finally:
        caching.enable_all()
        await app.stop()


async def _wall(app: App, stream: Stream, options: argparse.Namespace) -> list[dict[str, float]]:
    """Per window of ``--calls``: wall time and the event loop thread's CPU per call, and the share of the wall the
    thread was busy (the rest: waiting with every call in flight parked, e.g. on the journal's fsync)."""
    windows = []
    for _ in range(options.rounds):
        wall = time.perf_counter()
        cpu = await app.run(stream.take(options.calls), options.concurrency)
        wall = (time.perf_counter() - wall) / options.calls
        windows.append({"wall_us": round(wall * 1e6, 1), "cpu_us": round(cpu * 1e6, 1), "busy": round(cpu / wall, 3)})
    return windows


async def _each(app: App, stream: Stream, options: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    from forecourt import caching

    async def timed() -> float:
        await app.run(stream.take(options.warm), options.concurrency)
        return await app.run(stream.take(options.calls), options.concurrency)

    gains: dict[str, Any] = {}
    for name in names:
        on, off = [], []
        for _ in range(options.rounds):  # on, off, on, off, ...: a drift of the machine falls on both alike
            on.append(await timed())
            caching.disable(name)
            off.append(await timed())
            caching.enable_all()
        ratio = statistics.median(off) / statistics.median(on)
        gains[name] = {
            "off_over_on": round(ratio, 3),
            "saved_us_per_call": round((statistics.median(off) - statistics.median(on)) * 1e6, 1),
            "on_us": [round(v * 1e6) for v in on],
            "off_us": [round(v * 1e6) for v in off],
        }
        print(name, gains[name], file=sys.stderr, flush=True)
    return gains


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=None, help="the bulk data set (generated when not given)")
    parser.add_argument("--url", default=None, help="a database URL instead of --db (fair workload only)")
    parser.add_argument("--workload", choices=["fair", "mixed"], default="mixed")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--warm", type=int, default=1000, help="calls before each measured run")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--each", action="store_true", help="measure each cache off against everything on")
    parser.add_argument("--costs", action="store_true", help="time each cache's misses, one call at a time")
    parser.add_argument("--sample", type=float, default=0.125, help="with --costs: share of hits timed as misses")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--wall", action="store_true", help="wall and CPU per call per window of --calls (--rounds windows)"
    )
    parser.add_argument("--only", default="", help="with --each: only these caches (comma-separated)")
    parser.add_argument("--disable", default="", help="comma-separated cache names to disable for the whole run")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ.update(
            FORECOURT_AUDIT_JOURNAL_DIR=f"{folder}/journal",
            FORECOURT_API_KEY_PEPPER=PEPPER,
            FORECOURT_CACHE_ENABLED=os.environ.get(
                "FORECOURT_CACHE_ENABLED", "false" if options.workload == "fair" else "true"
            ),
            FORECOURT_LOG_LEVEL="WARNING",
            **{f"FORECOURT_RATE_{s}_PER_MINUTE": "1000000000" for s in ("COMPANY", "MEMBER", "ACTION", "ANONYMOUS")},
        )
        options.db = options.db or Path(folder) / "bench.db"
        if options.url is not None and options.workload != "fair":
            parser.error("--url runs the fair workload only (mixed reads its vehicle ids from the SQLite file)")
        key = _prepare(options.db, options.url)
        from forecourt import caching

        caching.disable(*[n for n in options.disable.split(",") if n])
        import uvloop

        print(json.dumps(uvloop.run(_measure(options, key)), indent=1))


if __name__ == "__main__":
    main()
