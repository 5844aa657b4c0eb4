"""Where a mixed-workload call's CPU goes on PostgreSQL + Redis: per action and door, in process.

Runs the app in process (``create_app``, ASGI calls without sockets, one call at a time) on bench/mixed.py's data
set and request mix (1,000 rooftops x 200 vehicles, MCP, A2A and REST), after ``--warm`` calls:

- default: thread CPU and wall time per call, by action and door;
- ``--round-trips``: PostgreSQL statements (asyncpg) and Redis commands (redis-py) per call, by action and door,
  the most frequent of each (work done in a call's context counts for that call; the rest is "background");
- ``--profile FILE``: a cProfile on the thread-time clock into FILE, with the share of each package printed.

``--experiment NAME`` applies a what-if patch of bench/experiments/sitecustomize.py first. The data set is made
once in database ``--database`` (kept, with its world and key under ``--state``) and reused by later runs.

    .venv/bin/python bench/mixed_profile.py --round-trips
    .venv/bin/python bench/mixed_profile.py --calls 1000 --profile /tmp/mixed.prof --experiment authority_once_per_call
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextvars
import cProfile
import importlib.util
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mixed
from mixed_calls import Call, Traffic, rooftops_from, verdict, wire

CURRENT = contextvars.ContextVar("mixed_profile_call", default="background")
PG: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
REDIS: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)


def prepare(args: argparse.Namespace) -> tuple[str, Path]:
    """The API key and world file of the kept data set (made on first use); sets the ``FORECOURT_*`` environment."""
    state = Path(args.state)
    env_file, key_file, world_file = state / "env.json", state / "key", state / "world.json"
    if not world_file.exists():
        state.mkdir(parents=True, exist_ok=True)
        db_url = asyncio.run(mixed.create_db(args.pg_admin, args.database))
        env = mixed.bench_env(db_url, args.redis, f"{args.database}:", 8999, state, [])
        key_file.write_text(mixed.prepare_data(env, args.dealerships, args.vehicles))
        world_file.write_text(json.dumps(asyncio.run(mixed.read_world(db_url))))
        env_file.write_text(json.dumps({k: v for k, v in env.items() if k.startswith("FORECOURT_")}))
    os.environ.update(json.loads(env_file.read_text()))
    return key_file.read_text().strip(), world_file


def count_round_trips() -> None:
    """Count every asyncpg statement and redis-py command under the current call's name."""
    import asyncpg.connection
    import redis.asyncio.client

    def counted(original: Any, kind: str) -> Any:
        async def run(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            PG[CURRENT.get()][f"{kind} {' '.join(str(query).split())[:80]}"] += 1
            return await original(self, query, *args, **kwargs)

        return run

    from sqlalchemy.dialects.postgresql import asyncpg as sqlalchemy_asyncpg

    for name in ("execute", "executemany", "fetch", "fetchrow", "fetchval"):
        setattr(asyncpg.connection.Connection, name, counted(getattr(asyncpg.connection.Connection, name), name))
    cursor = sqlalchemy_asyncpg.AsyncAdapt_asyncpg_cursor  # SQLAlchemy's statements: prepared, then run
    cursor._prepare_and_execute = counted(cursor._prepare_and_execute, "statement")  # type: ignore[method-assign]
    command = redis.asyncio.client.Redis.execute_command

    async def execute_command(self: Any, *args: Any, **kwargs: Any) -> Any:
        REDIS[CURRENT.get()][str(args[0])] += 1
        return await command(self, *args, **kwargs)

    redis.asyncio.client.Redis.execute_command = execute_command  # type: ignore[method-assign]


def apply_experiments(names: list[str]) -> None:
    if not names:
        return
    os.environ["FORECOURT_BENCH_EXPERIMENTS"] = ",".join(names)
    path = Path(__file__).resolve().parent / "experiments" / "sitecustomize.py"
    spec = importlib.util.spec_from_file_location("bench_experiments", path)
    assert spec is not None
    assert spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


class InProcess:
    """The app in process, and one mix call through ASGI."""

    def __init__(self, key: str) -> None:
        from forecourt.bootstrap import create_app
        from forecourt.settings import Settings

        self.app, self.key, self.sent, self.errors = create_app(Settings()), key, 0, collections.Counter[str]()

    async def start(self) -> None:
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        await self._inbox.put({"type": "lifespan.startup"})
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._life = asyncio.create_task(self.app(scope, self._inbox.get, self._outbox.put))
        if (await self._outbox.get())["type"] != "lifespan.startup.complete":
            raise SystemExit("the app did not start")

    async def stop(self) -> None:
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._life

    async def call(self, call: Call, traffic: Traffic) -> None:
        self.sent += 1
        path, headers, body = wire(call, self.key, f"p{self.sent}")
        raw = json.dumps(body, separators=(",", ":")).encode()
        head = [(b"host", b"127.0.0.1:8999"), (b"content-type", b"application/json")]
        head += [(b"content-length", str(len(raw)).encode())]
        head += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": head,
            "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 8999), "state": {}, "extensions": {},
        }  # fmt: skip
        answer: dict[str, Any] = {"status": 0, "body": b""}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answer["body"] += message.get("body", b"")

        await self.app(scope, receive, send)
        ok, data, _ = verdict(call, answer["status"], answer["body"])
        if ok:
            traffic.answered(call, data)
        else:
            self.errors[f"{call.action}|{call.door}"] += 1


async def run(args: argparse.Namespace, key: str, world: dict[str, Any]) -> None:
    app = InProcess(key)
    await app.start()
    traffic = Traffic(rooftops_from(world), seed=args.seed, tag=f"prof{os.getpid()}")
    for _ in range(args.warm):
        await app.call(traffic.next_call(), traffic)
    PG.clear()
    REDIS.clear()
    profile = cProfile.Profile(time.thread_time) if args.profile else None
    per_key: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    started, cpu = time.perf_counter(), time.thread_time()
    if profile is not None:
        profile.enable()
    for _ in range(args.calls):
        call = traffic.next_call()
        name = f"{call.action}|{call.door}"
        token = CURRENT.set(name)
        t0, w0 = time.thread_time(), time.perf_counter()
        try:
            await app.call(call, traffic)
        finally:
            CURRENT.reset(token)
        per_key[name].append(((time.thread_time() - t0) * 1000, (time.perf_counter() - w0) * 1000))
    if profile is not None:
        profile.disable()
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - started
    await app.stop()
    per_call = f"{1000 * cpu / args.calls:.2f} ms thread CPU, {1000 * wall / args.calls:.2f} ms wall"
    print(f"{args.calls} calls: {per_call} per call")
    print(f"errors: {dict(app.errors) or 0}")
    for name, values in sorted(per_key.items()):
        line = f"  {name:28} n={len(values):4}  cpu mean {statistics.mean(v[0] for v in values):6.2f} ms"
        line += f"  wall p50 {statistics.median(v[1] for v in values):6.2f} ms"
        if args.round_trips:
            n = len(values)
            line += f"  PostgreSQL {sum(PG[name].values()) / n:5.2f}  Redis {sum(REDIS[name].values()) / n:5.2f}"
        print(line)
    if args.round_trips:
        print(f"background over {wall:.1f} s: PostgreSQL {sum(PG['background'].values())}, Redis "
              f"{sum(REDIS['background'].values())}")  # fmt: skip
        for name in [*sorted(per_key), "background"]:
            n = len(per_key.get(name, [])) or 1
            top = [f"{c / n:.2f} {s}" for s, c in (PG[name] + REDIS[name]).most_common(6)]
            print(f"  {name}: " + "; ".join(top))
    if profile is not None:
        profile.dump_stats(args.profile)
        packages(args.profile)


def packages(path: str) -> None:
    """Print each package's share of the profile's own time."""
    stats = pstats.Stats(path)
    shares: collections.Counter[str] = collections.Counter()
    for (file, _, function), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "site-packages/" in file:
            shares[file.split("site-packages/")[1].split("/")[0]] += own
        elif "src/forecourt/" in file:
            shares["forecourt/" + "/".join(file.split("src/forecourt/")[1].split("/")[:2])] += own
        elif "python3" in file and "/lib/" in file:
            shares["stdlib " + file.rsplit("/lib/", 1)[1].split("/")[1]] += own
        else:
            shares[f"builtin {function[:40]}"] += own
    total = sum(shares.values())
    for name, own in shares.most_common(20):
        print(f"  {100 * own / total:5.1f} %  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warm", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--round-trips", action="store_true", help="count PostgreSQL and Redis round trips per call")
    parser.add_argument("--profile", default=None, metavar="FILE", help="cProfile (thread-time clock) into FILE")
    parser.add_argument("--experiment", action="append", default=[], help="a patch of bench/experiments")
    parser.add_argument("--database", default="fc_bench_mixed_profile", help="kept PostgreSQL database")
    parser.add_argument("--state", default="/tmp/fc_bench_mixed_profile", help="its key, world and settings")
    parser.add_argument("--dealerships", type=int, default=1000)
    parser.add_argument("--vehicles", type=int, default=200)
    parser.add_argument("--pg-admin", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    key, world = prepare(args)
    apply_experiments(args.experiment)
    if args.round_trips:
        count_round_trips()
    asyncio.run(run(args, key, json.loads(world.read_text())))


if __name__ == "__main__":
    main()
