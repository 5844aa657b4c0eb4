"""What observability costs per call: metric updates (in memory and multiprocess), the HTTP edge middleware, the
JSON access-log line. Run twice to compare modes:

    .venv/bin/python bench/observe_overhead.py
    PROMETHEUS_MULTIPROC_DIR=$(mktemp -d) .venv/bin/python bench/observe_overhead.py

Results go in docs/benchmarks.md ("Observability overhead").
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import timeit
from typing import Any

from forecourt.bootstrap import create_app
from forecourt.gateway.telemetry import build_metrics
from forecourt.logs import configure_logging
from forecourt.settings import Settings


def metric_updates() -> dict[str, float]:
    m = build_metrics()
    call = m.calls.labels("inventory.search", "dealer", "demo", "-", "200")
    hist = m.duration.labels("inventory.search", "dealer", "demo", "-")
    n = 200_000
    out = {}
    for name, fn in {
        "counter inc (child cached)": call.inc,
        "histogram observe (child cached)": lambda: hist.observe(0.0012),
        "gateway: labels()+inc and labels()+observe": lambda: (
            m.calls.labels("inventory.search", "dealer", "demo", "-", "200").inc(),
            m.duration.labels("inventory.search", "dealer", "demo", "-").observe(0.0012),
        ),
    }.items():
        out[name] = min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6
    return out


async def _call(app: Any) -> None:
    scope = {
        "type": "http", "method": "GET", "path": "/healthz", "raw_path": b"/healthz", "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000")], "http_version": "1.1", "scheme": "http",
        "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 1), "root_path": "",
    }  # fmt: skip

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_: Any) -> None:
        return None

    await app(scope, receive, send)


async def edge(access: bool, log: bool) -> float:
    db = tempfile.mkdtemp()
    app = create_app(Settings(database_url=f"sqlite+aiosqlite:///{db}/f.db", access_log=log))
    if not access:
        app.user_middleware = app.user_middleware[1:]
    app.middleware_stack = app.build_middleware_stack()
    n = 20_000
    for _ in range(2_000):
        await _call(app)
    best = float("inf")
    for _ in range(5):
        loop = asyncio.get_running_loop()
        started = loop.time()
        for _ in range(n):
            await _call(app)
        best = min(best, (loop.time() - started) / n * 1e6)
    return best


async def main() -> None:
    mode = "multiprocess" if os.environ.get("PROMETHEUS_MULTIPROC_DIR") else "in memory"
    for name, us in metric_updates().items():
        print(f"{mode:12} {name:45} {us:6.2f} µs")
    configure_logging("INFO")
    out, sys.stderr = sys.stderr, open(os.devnull, "w")  # noqa: SIM115, ASYNC230 - the log lines go nowhere
    try:
        bare = await edge(False, False)
        metrics = await edge(True, False)
        logged = await edge(True, True)
    finally:
        sys.stderr = out
    print(f"{mode:12} {'GET /healthz without the edge middleware':45} {bare:6.1f} µs")
    print(f"{mode:12} {'  + HTTP metrics (access log off)':45} {metrics - bare:+6.1f} µs")
    print(f"{mode:12} {'  + HTTP metrics and the JSON access log':45} {logged - bare:+6.1f} µs")


if __name__ == "__main__":
    asyncio.run(main())
