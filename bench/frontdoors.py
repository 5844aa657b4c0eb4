"""Front-door benchmark: MCP, A2A and REST against ``forecourt serve --workers N``, driven by ``wrk``.

For each database (SQLite file, or PostgreSQL + Redis) the script migrates a fresh database, loads the demo
tenants (``load_demo``: 60 vehicles per dealership) and issues an API key for ``crm-agent``; then for each worker
count it starts the real server (``.venv/bin/forecourt serve --workers N``, settings from ``FORECOURT_*``) and
drives each front door in turn with ``wrk`` — a separate process, one Lua script per front door under
``bench/lua/``:

- ``mcp``: ``tools/call inventory.search`` over Streamable HTTP, 2026-07-28 stateless request with ``_meta``;
- ``a2a``: ``SendMessage`` with an AAP ``inventory.search.request`` at ``/dealers/demo-toyota-sf/a2a/jsonrpc``
  (anonymous public agent, ``A2A-Version: 1.0``);
- ``rest``: the envelope ``POST /mcp/inventory.search``.

Every answer is checked (status 200, a result, no tool/protocol error). Peak RSS is ``VmHWM`` of each worker
(``/proc/<pid>/status``; workers are the uvicorn master's ``spawn_main`` children, or the master itself with
one worker) read after each front door, so it is the peak so far in that server's life. Worker CPU counts each
worker and its audit journal's fsync helper process. Rate limits are
raised for the run (the defaults would, rightly, refuse a load test). Prints JSON and Markdown rows.

    .venv/bin/python bench/frontdoors.py --db sqlite postgres --workers 1 2 --duration 20 --connections 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LUA = ROOT / "bench" / "lua"
FORECOURT = str(Path(sys.executable).parent / "forecourt")
PEPPER = "frontdoors-bench-pepper-0123456789abcdef"
DEALER = "demo-toyota-sf"
PG_DB = "forecourt_bench_frontdoors"
REDIS_PREFIX = "forecourt_bench_frontdoors:"
DOORS = ("mcp", "a2a", "rest")


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(db_url: str, port: int, redis_url: str | None, experiments: list[str] | None = None) -> dict[str, str]:
    """The ``FORECOURT_*`` environment of the server under test (``experiments``: bench/experiments patches)."""
    env = {
        **os.environ,
        "FORECOURT_DATABASE_URL": db_url,
        "FORECOURT_API_KEY_PEPPER": PEPPER,
        "FORECOURT_HOST": "127.0.0.1",
        "FORECOURT_PORT": str(port),
        "FORECOURT_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "FORECOURT_LOG_LEVEL": os.environ.get("FORECOURT_LOG_LEVEL", "INFO"),  # the production default
        "FORECOURT_RATE_COMPANY_PER_MINUTE": "1000000000",
        "FORECOURT_RATE_MEMBER_PER_MINUTE": "1000000000",
        "FORECOURT_RATE_ACTION_PER_MINUTE": "1000000000",
        "FORECOURT_RATE_ANONYMOUS_PER_MINUTE": "1000000000",
    }
    if redis_url:
        env["FORECOURT_REDIS_URL"] = redis_url
        env["FORECOURT_REDIS_PREFIX"] = REDIS_PREFIX
    if experiments:
        env["FORECOURT_BENCH_EXPERIMENTS"] = ",".join(experiments)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "bench" / "experiments"), env.get("PYTHONPATH")]))
    return env


# ---------------------------------------------------------------------------------------------- database


async def prepare(db_url: str) -> str:
    """Migrate, load the demo tenants and return a fresh API key for ``crm-agent``."""
    from forecourt.demo import load_demo
    from forecourt.gateway.auth.apikeys import ApiKeyService
    from forecourt.gateway.backends.memory import MemoryRevocationList
    from forecourt.store import open_store_url, upgrade_async

    await upgrade_async(db_url)
    store = open_store_url(db_url)
    try:
        await load_demo(store)
        issued = await ApiKeyService(store, PEPPER, MemoryRevocationList()).create("demo-motor-group", "crm-agent")
        return issued.key
    finally:
        await store.close()


async def create_pg(admin_url: str) -> str:
    """(Re)create the benchmark database; returns its SQLAlchemy URL."""
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{PG_DB}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{PG_DB}"')
    finally:
        await conn.close()
    base = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    return f"{base}/{PG_DB}"


async def drop_pg(admin_url: str) -> None:
    """Drop the benchmark database."""
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{PG_DB}" WITH (FORCE)')
    finally:
        await conn.close()


def clear_redis(redis_url: str) -> None:
    """Delete the benchmark's Redis keys."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{REDIS_PREFIX}*", count=1000))
        for i in range(0, len(keys), 500):
            client.delete(*keys[i : i + 500])
    finally:
        client.close()


# ---------------------------------------------------------------------------------------------- processes


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (scans /proc; no psutil needed)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may contain spaces: split after the last ')'
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry))
    return sorted(found)


def workers_of(master: int) -> list[int]:
    """uvicorn worker pids: the master's ``spawn_main`` children, or the master itself when it serves alone."""
    pids = []
    for pid in children(master):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            pids.append(pid)
    return pids or [master]


def vm_kib(pid: int, field: str) -> int:
    """A ``VmHWM``/``VmRSS`` value of ``/proc/<pid>/status`` in KiB (0 when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) if match else 0


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` in seconds (0 when the process is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, summed over CPUs (/proc/stat)."""
    values = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])  # without guest time, which is already counted in user
    tick = os.sysconf("SC_CLK_TCK")
    return (total - idle) / tick, total / tick


class Server:
    """``forecourt serve --workers N`` in its own process group."""

    def __init__(self, env: dict[str, str], workers: int, log: Path) -> None:
        self.port = int(env["FORECOURT_PORT"])
        self.workers = workers
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [FORECOURT, "serve", "--dev", "--workers", str(workers)],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 120) -> list[int]:
        """Wait until /healthz answers and every worker is up; returns the worker pids."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            pids = workers_of(self.proc.pid)
            if len(pids) >= self.workers and _answers(self.port):
                time.sleep(1.0)  # the second worker may still be running its startup hooks
                if _answers(self.port):
                    return workers_of(self.proc.pid)
            time.sleep(0.2)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        """SIGTERM (graceful drain), then SIGKILL the group if it lingers."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._log.close()


def _answers(port: int) -> bool:
    for path in ("/healthz",):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            continue
    return False


# ---------------------------------------------------------------------------------------------- load


def wrk(door: str, port: int, token: str, seconds: int, connections: int, threads: int) -> dict[str, Any]:
    """Run wrk against one front door; returns its JSON summary plus ``rps``."""
    env = {**os.environ, "BENCH_TOKEN": token, "BENCH_DEALERSHIP": DEALER}
    out = subprocess.run(
        [
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{seconds}s",
            "--timeout",
            "10s",
            "-s",
            str(LUA / f"{door}.lua"),
            f"http://127.0.0.1:{port}/",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in out.stdout.splitlines() if x.startswith("JSON "))
    result: dict[str, Any] = json.loads(line[5:])
    result["rps"] = round(result["requests"] / result["seconds"], 1)
    if out.stderr.strip():
        result["stderr"] = out.stderr.strip()[:400]
    return result


def run_server(
    db: str, db_url: str, redis_url: str | None, token: str, workers: int, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """One server, every requested front door in turn."""
    port = free_port()
    log = Path(args.log_dir) / f"server-{db}-{workers}w.log"
    server = Server(server_env(db_url, port, redis_url, args.experiment), workers, log)
    rows = []
    try:
        pids = server.wait_ready()
        for door in args.doors:
            wrk(door, port, token, args.warmup, args.connections, args.threads)  # warm-up (caches, pools, JIT-free)
            load_before = os.getloadavg()[0]
            counted = pids + [c for p in pids for c in children(p)]  # each worker's audit-journal fsync helper too
            cpu_before = sum(cpu_seconds(p) for p in counted)
            busy_before, total_before = machine_busy_seconds()
            result = wrk(door, port, token, args.duration, args.connections, args.threads)
            busy_after, total_after = machine_busy_seconds()
            worker_cpu = sum(cpu_seconds(p) for p in counted) - cpu_before
            wall_cpus = total_after - total_before
            result.update(
                door=door,
                db=db,
                workers=workers,
                connections=args.connections,
                worker_pids=pids,
                experiments=args.experiment or [],
                peak_rss_mb=[round(vm_kib(p, "VmHWM") / 1024, 1) for p in pids],
                rss_mb=[round(vm_kib(p, "VmRSS") / 1024, 1) for p in pids],
                loadavg_1m_before=round(load_before, 2),
                loadavg_1m_after=round(os.getloadavg()[0], 2),
                # CPU the workers burnt per answered request (less sensitive to a busy machine than req/s),
                # and how the machine's CPU time was shared during the measured interval.
                worker_cpu_ms_per_request=round(1000 * worker_cpu / max(result["requests"], 1), 2),
                machine_busy_pct=round(100 * (busy_after - busy_before) / wall_cpus, 1),
                workers_pct_of_machine=round(100 * worker_cpu / wall_cpus, 1),
            )
            rows.append(result)
            print(json.dumps(result), file=sys.stderr, flush=True)
            time.sleep(args.pause)
    finally:
        server.stop()
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (as pasted into docs/benchmarks.md)."""
    out = [
        "| front door | database | workers | conns | req/s | p50 ms | p95 ms | p99 ms | bad "
        "| worker CPU ms/req | CPU busy (workers) % | peak RSS/worker MB | load 1m |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for r in rows:
        door = f"{r['door']} (+{'+'.join(r['experiments'])})" if r.get("experiments") else r["door"]
        bad = r["bad_responses"] + r["socket_errors"]
        rss = " / ".join(f"{x:.0f}" for x in r["peak_rss_mb"])
        load = f"{r['loadavg_1m_before']:.2f}→{r['loadavg_1m_after']:.2f}"
        out.append(
            f"| {door} | {r['db']} | {r['workers']} | {r['connections']} | {r['rps']:.0f} | {r['p50_ms']:.1f} | "
            f"{r['p95_ms']:.1f} | {r['p99_ms']:.1f} | {bad} | {r['worker_cpu_ms_per_request']:.2f} | "
            f"{r['machine_busy_pct']:.0f} ({r['workers_pct_of_machine']:.0f}) | {rss} | {load} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", nargs="+", default=["sqlite"], choices=["sqlite", "postgres"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--doors", nargs="+", default=list(DOORS), choices=DOORS)
    parser.add_argument("--duration", type=int, default=20, help="seconds of measured load per front door")
    parser.add_argument("--warmup", type=int, default=3, help="seconds of unmeasured load first")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds of rest between front doors")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--pg-admin", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--experiment", nargs="*", default=[], help="what-if patches from bench/experiments/sitecustomize.py"
    )
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL database afterwards")
    parser.add_argument("--log-dir", default=None, help="where server logs go (default: a temporary directory)")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        args.log_dir = args.log_dir or tmp
        for db in args.db:
            if db == "postgres":
                db_url, redis_url = asyncio.run(create_pg(args.pg_admin)), args.redis
                clear_redis(redis_url)
            else:
                db_url, redis_url = f"sqlite+aiosqlite:///{Path(tmp) / 'frontdoors.db'}", None
            try:
                token = asyncio.run(prepare(db_url))
                for workers in args.workers:
                    rows += run_server(db, db_url, redis_url, token, workers, args)
            finally:
                if db == "postgres":
                    if not args.keep:
                        asyncio.run(drop_pg(args.pg_admin))
                    clear_redis(args.redis)
        print(json.dumps({"rows": rows, "cpus": os.cpu_count()}, indent=2))
        print(markdown(rows))


if __name__ == "__main__":
    main()
