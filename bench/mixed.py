"""Mixed traffic on PostgreSQL + Redis: a capacity probe, then a soak at half capacity over MCP, A2A and REST.

The orchestrator makes its own PostgreSQL database (``fc_bench_mixed_<pid>``, dropped at the end unless
``--keep``) and Redis prefix (its keys deleted at the end), runs ``forecourt db upgrade``, ``forecourt demo --bulk
--dealerships 1000 --vehicles 200`` (company ``bench-motor-group``, member ``bench-agent``) and ``forecourt keys
create --json``, reads a sample of each rooftop's stock (makes, bodies, years, prices, ids and VINs of available
units) and starts the real server as production runs it: ``forecourt serve --workers 2`` with random 48-character
secrets (no ``--dev``), ``FORECOURT_PUBLIC_BASE_URL``, rate limits raised to 10⁹/min, log level WARNING.

A separate load-generator process (``--load``, bench/mixed_load.py: asyncio streams on uvloop, keep-alive
connections, bench/soak.py's client) sends a seeded mix (bench/mixed_calls.py). Rooftops are drawn by Zipf-like
popularity; each call goes to one of the three front doors (MCP Streamable HTTP ``tools/call`` in the 2026-07-28
stateless era with the API key, A2A JSON-RPC ``SendMessage`` with an AAP DataPart at ``/dealers/{id}/a2a/jsonrpc``
as an anonymous buyer agent, the REST envelope ``POST /mcp/{action}`` with the API key):

- ``inventory.search`` with varied filters (make, body, price range, year), sorts (none, price asc/desc, year desc,
  mileage asc) and page sizes; 45 % of searches go on to 1-3 more pages (``next_cursor``, AAP ``skip``), sent as
  ``inventory.search/next`` in the following slots;
- ``inventory.get`` by id and by VIN (AAP ``inventory.vehicle``), ``inventory.facets``, ``dealer.information``;
- 5 % ``leads.create`` (AAP ``lead.submit``), each with a customer of its own (a unique e-mail) and consent.

First a capacity probe (closed loop, ``--probe-connections`` connections, ``--warmup`` + ``--probe`` seconds), then
the soak: open loop at ``--fraction`` (0.5) of the probe's throughput for ``--duration`` seconds (request *i* goes
at ``t0 + i / rate``; one due while ``--max-in-flight`` are outstanding is skipped, and counts as an error). Every
answer is checked (HTTP 200, no JSON-RPC error, no tool error, the AAP response type, the envelope's status 200).
The server's RSS (sum over the serve process tree) is sampled every ``--sample`` seconds. Prints a table per action
and door (count, errors, req/s, p50/p99), RSS in the soak's first and last minute, the load average before and
after, and the verdict against the goal (p99 ≤ 50 ms, 0 errors, flat RSS); ``--out`` gets the JSON.

    .venv/bin/python bench/mixed.py --duration 600 --out /tmp/mixed_traffic.json

``--experiment NAME`` runs the server with a what-if patch of bench/experiments/sitecustomize.py (a proposed change,
measured before it is made); ``--server-env FORECOURT_X=Y`` with another setting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import frontdoors as fd
import soak
from mixed_calls import DEALER_ACTION, DOORS

GOAL_P99_MS = 50.0
FLAT_RSS_GROWTH = 0.05  # flat: the soak's last minute's mean RSS within 5 % of its first minute's

# ---------------------------------------------------------------------------------------------- orchestrator


def bench_env(
    db_url: str, redis_url: str, prefix: str, port: int, tmp: Path, extra: list[str], experiments: list[str] = ()
) -> dict[str, str]:
    """The environment of every ``forecourt`` command of the run: production secrets, raised limits, ``extra``
    settings and ``experiments`` (what-if patches)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env.update(
        FORECOURT_DATABASE_URL=db_url,
        FORECOURT_REDIS_URL=redis_url,
        FORECOURT_REDIS_PREFIX=prefix,
        FORECOURT_CURSOR_SECRET=secrets.token_urlsafe(36),
        FORECOURT_API_KEY_PEPPER=secrets.token_urlsafe(36),
        FORECOURT_HOST="127.0.0.1",
        FORECOURT_PORT=str(port),
        FORECOURT_PUBLIC_BASE_URL=f"http://127.0.0.1:{port}",
        FORECOURT_LOG_LEVEL="WARNING",
        FORECOURT_AUDIT_JOURNAL_DIR=str(tmp / "audit-journal"),
        STATE_DIRECTORY=str(tmp),  # where serve leaves the bootstrap operator key (not the checkout's var/)
    )
    for rule in ("COMPANY", "MEMBER", "ACTION", "ANONYMOUS"):
        env[f"FORECOURT_RATE_{rule}_PER_MINUTE"] = "1000000000"
    env.update(item.split("=", 1) for item in extra)  # what-if settings: --server-env FORECOURT_X=Y
    if experiments:  # what-if patches of bench/experiments/sitecustomize.py, for the server only
        env["FORECOURT_BENCH_EXPERIMENTS"] = ",".join(experiments)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(fd.ROOT / "bench" / "experiments"), env.get("PYTHONPATH")])
        )
    return env


async def create_db(admin_url: str, name: str) -> str:
    """A fresh database ``name``; returns its SQLAlchemy URL."""
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1) + f"/{name}"


async def drop_db(admin_url: str, name: str) -> None:
    """Drop database ``name``."""
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def clear_redis(redis_url: str, prefix: str) -> int:
    """Delete the run's Redis keys; returns how many there were."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for i in range(0, len(keys), 500):
            client.delete(*keys[i : i + 500])
        return len(keys)
    finally:
        client.close()


def prepare_data(env: dict[str, str], dealerships: int, vehicles: int) -> str:
    """Migrate, load the bulk rooftops and return a fresh API key of ``bench-agent``."""
    forecourt = fd.FORECOURT
    subprocess.run([forecourt, "db", "upgrade"], env=env, check=True, capture_output=True)
    bulk = [forecourt, "demo", "--bulk", "--dealerships", str(dealerships), "--vehicles", str(vehicles)]
    subprocess.run(bulk, env=env, check=True, capture_output=True)
    create = [forecourt, "keys", "create", "--company", "bench-motor-group", "--member", "bench-agent", "--json"]
    done = subprocess.run(create, env=env, check=True, capture_output=True, text=True)
    return str(json.loads(done.stdout)["key"])


async def read_world(db_url: str, per_rooftop: int = 20) -> dict[str, Any]:
    """Each rooftop's makes, bodies, years, price points and a sample of its available units (ids and VINs)."""
    import asyncpg

    conn = await asyncpg.connect(db_url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        rows = await conn.fetch(
            "SELECT dealership_id, id, vin, make, body, year, price_minor FROM vehicles "
            "WHERE status = 'available' ORDER BY dealership_id, id"
        )
    finally:
        await conn.close()
    by_rooftop: dict[str, list[Any]] = {}
    for row in rows:
        by_rooftop.setdefault(row["dealership_id"], []).append(row)
    rooftops = []
    for rooftop_id, units in sorted(by_rooftop.items()):
        prices = sorted(u["price_minor"] for u in units)
        points = sorted(
            {max(10_000, prices[int(q * (len(prices) - 1))] // 10_000 * 10_000) for q in (0.1, 0.3, 0.5, 0.7, 0.9)}
        )
        step = max(1, len(units) // per_rooftop)
        rooftops.append(
            {
                "id": rooftop_id,
                "makes": sorted({u["make"] for u in units}),
                "bodies": sorted({u["body"] for u in units}),
                "years": [min(u["year"] for u in units), max(u["year"] for u in units)],
                "prices": points,
                "vehicles": [[u["id"], u["vin"]] for u in units[::step][:per_rooftop]],
            }
        )
    return {"rooftops": rooftops}


class ProductionServer(fd.Server):
    """``forecourt serve --workers N`` as production runs it: no ``--dev``, the environment's secrets."""

    def __init__(self, env: dict[str, str], workers: int, log: Path) -> None:
        self.port = int(env["FORECOURT_PORT"])
        self.workers = workers
        self._log = log.open("w")
        command = [fd.FORECOURT, "serve", "--workers", str(workers), "--host", "127.0.0.1", "--port", str(self.port)]
        self.proc = subprocess.Popen(
            command, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )


def process_tree(root: int) -> list[int]:
    """``root`` and every descendant (one scan of /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(parents.get(pid, []))
    return sorted(found)


class RssSampler:
    """Every ``every`` seconds: (monotonic time, MB of RSS summed over the serve process tree, MB by process)."""

    def __init__(self, root: int, every: float) -> None:
        self.root, self.every = root, every
        self.samples: list[tuple[float, float, dict[int, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            each = {p: fd.vm_kib(p, "VmRSS") / 1024 for p in process_tree(self.root)}
            self.samples.append((time.monotonic(), sum(each.values()), each))
            self._stop.wait(self.every)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def last_mb(self) -> float:
        return round(self.samples[-1][1], 1) if self.samples else 0.0

    def between(self, start: float, end: float) -> dict[str, Any]:
        """RSS over [start, end]: first and last minute's means, the slope after the first minute, the verdict."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        points = [(t - start, mb) for t, mb, _ in inside]
        if not points:
            return {}
        span = end - start
        first = [mb for t, mb in points if t < 60] or [points[0][1]]
        last = [mb for t, mb in points if t >= span - 60] or [points[-1][1]]
        first_mb, last_mb = sum(first) / len(first), sum(last) / len(last)
        return {
            "samples": len(points),
            "first_minute_mb": round(first_mb, 1),
            "last_minute_mb": round(last_mb, 1),
            "growth_pct": round(100 * (last_mb - first_mb) / first_mb, 2),
            "peak_mb": round(max(mb for _, mb in points), 1),
            "slope_mb_per_min_after_first_minute": soak.slope_mb_per_min([p for p in points if p[0] >= 60]),
            "flat": last_mb <= first_mb * (1 + FLAT_RSS_GROWTH),
            "by_process_first_last_mb": {  # which process grew: the master, a worker, a journal helper
                f"{pid} {_command(pid)}": [round(inside[0][2].get(pid, 0.0), 1), round(mb, 1)]
                for pid, mb in inside[-1][2].items()
            },
        }


def _command(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    return " ".join(w.decode(errors="replace").rsplit("/", 1)[-1] for w in words[:3])[:60]


def cache_metrics(port: int) -> dict[str, dict[str, float]]:
    """Hits, misses and entries of every named cache so far (``/metrics``: every worker's, added up)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        for kind in ("hits_total", "misses_total", "entries"):
            head = f'forecourt_process_cache_{kind}{{cache="'
            if line.startswith(head):
                name = line[len(head) :].split('"', 1)[0]
                kinds = found.setdefault(name, {})
                kinds[kind] = kinds.get(kind, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def run_loader(
    args: argparse.Namespace, port: int, token: str, world: Path, mode: str, rate: float, sampler: RssSampler
) -> dict[str, Any]:
    """One load-generator process; its window lines go to stderr with the server's RSS; returns its final line."""
    seconds = args.probe if mode == "closed" else args.duration
    command = [sys.executable, __file__, "--load", f"http://127.0.0.1:{port}", "--world", str(world), "--mode", mode]
    command += ["--seed", str(args.seed + (0 if mode == "closed" else 1)), "--tag", f"{os.getpid()}{mode[0]}"]
    command += ["--connections", str(args.probe_connections), "--warmup", str(args.warmup), "--seconds", str(seconds)]
    command += ["--rate", str(rate), "--window", str(args.window), "--max-in-flight", str(args.max_in_flight)]
    loader = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env={**os.environ, "MIXED_TRAFFIC_TOKEN": token}
    )
    final: dict[str, Any] = {"windows": []}
    assert loader.stdout is not None
    for line in loader.stdout:
        record = json.loads(line)
        if "final" in record:
            final.update(record["final"])
            continue
        record.update(phase=mode, rss_mb=sampler.last_mb())
        final["windows"].append(record)
        print(json.dumps(record), file=sys.stderr, flush=True)
    if loader.wait() != 0 or "requests" not in final:
        raise RuntimeError(f"the load generator failed ({loader.returncode})")
    return final


def uptime() -> str:
    """``uptime``'s line (the machine is shared: its load goes with the numbers)."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def serve_and_load(args: argparse.Namespace, env: dict[str, str], token: str, world: Path, log: Path) -> dict[str, Any]:
    """Start the server, probe its capacity, soak it at ``--fraction`` of that; returns the results."""
    port = int(env["FORECOURT_PORT"])
    server = ProductionServer(env, args.workers, log)
    try:
        server.wait_ready(timeout=180)
        sampler = RssSampler(server.proc.pid, args.sample)
        sampler.start()
        probe = run_loader(args, port, token, world, "closed", 0.0, sampler)
        rate = round(probe["rps"] * args.fraction, 1)
        cache_before = cache_metrics(port)
        pids = process_tree(server.proc.pid)
        cpu_before, machine_before = sum(fd.cpu_seconds(p) for p in pids), fd.machine_busy_seconds()
        started = time.monotonic()
        result = run_loader(args, port, token, world, "open", rate, sampler)
        ended = time.monotonic()
        cpu = sum(fd.cpu_seconds(p) for p in pids) - cpu_before
        machine = [after - before for after, before in zip(fd.machine_busy_seconds(), machine_before, strict=True)]
        cache_after = cache_metrics(port)
        sampler.stop()
        return {
            "probe": probe,
            "rate": rate,
            "soak": result,
            "rss": sampler.between(started, ended),
            "result_cache": {
                "hits": cache_after["gateway.result_cache"].get("hits_total", 0.0)
                - cache_before.get("gateway.result_cache", {}).get("hits_total", 0.0),
                "misses": cache_after["gateway.result_cache"].get("misses_total", 0.0)
                - cache_before.get("gateway.result_cache", {}).get("misses_total", 0.0),
            },
            "cache_entries_at_end": {k: v["entries"] for k, v in sorted(cache_after.items()) if v.get("entries")},
            "cpu": {  # during the soak: the server tree's cores, the load generator's, the whole machine's busy share
                "server_cores": round(cpu / (ended - started), 2),
                "server_cpu_ms_per_request": round(1000 * cpu / max(result["requests"], 1), 2),
                "client_cores": round(result["client_cpu_s"] / (ended - started), 2),
                "machine_busy_pct": round(100 * machine[0] / machine[1], 1),
            },
        }
    finally:
        server.stop()


def goal(summary: dict[str, Any]) -> dict[str, Any]:
    """The soak against the goal: p99 ≤ 50 ms at half capacity, 0 errors, flat RSS."""
    soak_result, rss = summary["soak"], summary["rss"]
    over = {k: v["p99_ms"] for k, v in soak_result["by_key"].items() if v.get("p99_ms", 0) > GOAL_P99_MS}
    checks = {
        "p99_ms": soak_result.get("p99_ms"),
        "p99_met": soak_result.get("p99_ms", float("inf")) <= GOAL_P99_MS,
        "keys_over_p99_goal": over,
        "errors": soak_result["errors"] + soak_result["skipped"],
        "errors_met": soak_result["errors"] + soak_result["skipped"] == 0,
        "rss_flat": bool(rss.get("flat")),
    }
    checks["met"] = checks["p99_met"] and checks["errors_met"] and checks["rss_flat"]
    return checks


def table(summary: dict[str, Any]) -> str:
    """The soak per action and door, as Markdown (as pasted into docs/benchmarks.md)."""
    soak_result = summary["soak"]
    order = {name: i for i, name in enumerate(DEALER_ACTION)}
    rows = sorted(
        soak_result["by_key"].items(), key=lambda kv: (order[kv[0].split("|")[0]], DOORS.index(kv[0].split("|")[1]))
    )
    out = [
        "| action | door | count | errors | req/s | p50 ms | p99 ms | max ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    cells = "| {} | {} | {count} | {errors} | {rps:.1f} | {p50_ms:.1f} | {p99_ms:.1f} | {max_ms:.0f} |"
    for key, r in rows:
        out.append(cells.format(*key.split("|"), **r))
    s = soak_result
    errors = f"{s['errors']} (+{s['skipped']} skipped)"
    out.append(cells.format("**all**", "", **{**s, "errors": errors, "count": s["requests"]}))
    return "\n".join(out)


def orchestrate(args: argparse.Namespace) -> dict[str, Any]:
    """Prepare the database, serve, probe, soak, clean up; returns the summary."""
    name = f"fc_bench_mixed_{os.getpid()}"
    prefix = f"{name}:"
    summary: dict[str, Any] = {"uptime_before": uptime(), "database": name, "redis_prefix": prefix}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        log = Path(args.log_dir or tmp) / "mixed-traffic-server.log"
        db_url = asyncio.run(create_db(args.pg_admin, name))
        try:
            env = bench_env(db_url, args.redis, prefix, fd.free_port(), tmp, args.server_env, args.experiment)
            summary["server_env"], summary["experiments"] = args.server_env, args.experiment
            started = time.monotonic()
            token = prepare_data(env, args.dealerships, args.vehicles)
            world = asyncio.run(read_world(db_url))
            summary["prepare_s"] = round(time.monotonic() - started, 1)
            summary["rooftops"] = len(world["rooftops"])
            world_file = tmp / "world.json"
            world_file.write_text(json.dumps(world))
            summary.update(serve_and_load(args, env, token, world_file, log))
            if summary["soak"]["errors"]:
                summary["server_log_tail"] = log.read_text(errors="replace")[-3000:]
        finally:
            if not args.keep:
                asyncio.run(drop_db(args.pg_admin, name))
            summary["redis_keys_deleted"] = clear_redis(args.redis, prefix)
    summary["uptime_after"] = uptime()
    summary["goal"] = goal(summary)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=600, help="seconds of the soak")
    parser.add_argument("--fraction", type=float, default=0.5, help="the soak's rate as a fraction of capacity")
    parser.add_argument("--probe", type=float, default=30, help="seconds of the measured capacity probe")
    parser.add_argument("--warmup", type=float, default=10, help="unmeasured seconds before the probe")
    parser.add_argument("--probe-connections", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dealerships", type=int, default=1000)
    parser.add_argument("--vehicles", type=int, default=200, help="vehicles per dealership")
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--window", type=float, default=30, help="seconds per reported window")
    parser.add_argument("--sample", type=float, default=5, help="seconds between RSS samples")
    parser.add_argument("--max-in-flight", type=int, default=128)
    parser.add_argument("--pg-admin", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL database afterwards")
    parser.add_argument("--log-dir", default=None, help="where the server log goes (default: a temporary directory)")
    parser.add_argument("--out", default=None, help="write the JSON summary here")
    parser.add_argument("--server-env", action="append", default=[], metavar="FORECOURT_X=Y", help="extra setting")
    parser.add_argument(
        "--experiment", action="append", default=[], help="a what-if patch of bench/experiments/sitecustomize.py"
    )
    # the load generator (run by the orchestrator in its own process)
    parser.add_argument("--load", metavar="BASE_URL", help=argparse.SUPPRESS)
    parser.add_argument("--world", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["closed", "open"], help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="x", help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, default=16, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=30, help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        import uvloop

        args.world_data = json.loads(Path(args.world).read_text())
        from mixed_load import load_main

        uvloop.run(load_main(args))
        return
    summary = orchestrate(args)
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2))
    probe, rss, checks = summary["probe"], summary["rss"], summary["goal"]
    print(f"{summary['uptime_before']}  (before)\n{summary['uptime_after']}  (after)")
    print(
        f"capacity (closed loop, {args.probe_connections} connections): {probe['rps']} req/s, "
        f"p50 {probe.get('p50_ms')} ms, p99 {probe.get('p99_ms')} ms, {probe['errors']} errors"
    )
    print(f"soak: {summary['rate']} req/s for {args.duration:.0f} s ({args.fraction:.0%} of capacity)")
    print(table(summary))
    print(
        f"RSS of the serve tree: first minute {rss.get('first_minute_mb')} MB, "
        f"last minute {rss.get('last_minute_mb')} MB ({rss.get('growth_pct')} %), "
        f"slope {rss.get('slope_mb_per_min_after_first_minute')} MB/min; by process (first, last MB): "
        f"{json.dumps(rss.get('by_process_first_last_mb'))}"
    )
    print(f"result cache during the soak: {summary['result_cache']}; send lag {summary['soak']['send_lag_ms']}")
    print(f"CPU during the soak: {summary['cpu']}")
    outcome = "met" if checks["met"] else "NOT met"
    print(f"goal (p99 <= {GOAL_P99_MS:.0f} ms, 0 errors, flat RSS): {outcome} {json.dumps(checks)}")


if __name__ == "__main__":
    main()
