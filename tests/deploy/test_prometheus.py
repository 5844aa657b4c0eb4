"""Prometheus, for real: the alert rules pass promtool, and a Prometheus server scraping ``forecourt serve
--workers 2`` sees counters that add up every worker (each scrape reaches one worker; the totals must not
depend on which)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from deploy.support import DEPLOY, free_port, require_program
from forecourt.store import upgrade_async

FORECOURT = str(Path(sys.executable).with_name("forecourt"))
CALLS = 24


def test_the_alert_rules_pass_promtool_check() -> None:
    promtool = require_program("promtool")
    out = subprocess.run(
        [promtool, "check", "rules", str(DEPLOY / "prometheus" / "alerts.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_alert_rules_fire_as_their_unit_tests_expect() -> None:
    promtool = require_program("promtool")
    out = subprocess.run(
        [promtool, "test", "rules", "alerts.test.yaml"],
        cwd=DEPLOY / "prometheus",
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _wait_until(check, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)  # the polling interval of a bounded wait


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``forecourt serve --workers 2`` on SQLite, with its metrics folder where the test can see it."""
    db = tmp_path / "forecourt.db"
    asyncio.run(upgrade_async(f"sqlite+aiosqlite:///{db}"))
    port = free_port()
    metrics_dir = tmp_path / "metrics"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORECOURT_", "PROMETHEUS_"))}
    env |= {
        "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
        "FORECOURT_PORT": str(port),
        "FORECOURT_LOG_LEVEL": "WARNING",
        "FORECOURT_DRAIN_PERIOD_S": "0",
        "FORECOURT_DRAIN_TIMEOUT_S": "2",
        "FORECOURT_METRICS_SAMPLE_INTERVAL_S": "0.5",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [FORECOURT, "serve", "--dev", "--workers", "2"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"

    def both_workers_up() -> bool:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            text = httpx.get(f"{url}/metrics", timeout=2).text
        except httpx.TransportError:
            return False
        return "forecourt_workers 2.0" in text

    try:
        _wait_until(both_workers_up, 120, "two workers")
        yield url, metrics_dir
    finally:
        _stop(proc)


def _query(prometheus: str, promql: str) -> float | None:
    response = httpx.get(f"{prometheus}/api/v1/query", params={"query": promql}, timeout=5).json()
    result = response["data"]["result"]
    return float(result[0]["value"][1]) if result else None


async def _calls(url: str, n: int) -> list[int]:
    async def one() -> int:
        # a connection per call, so that the kernel hands them to either worker
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.post(f"{url}/mcp/inventory.search", json={"payload": {"dealership_id": "x"}})
            return response.status_code

    return list(await asyncio.gather(*(one() for _ in range(n))))


def test_a_real_prometheus_scraping_two_workers_counts_exactly_the_calls_made(
    two_workers: tuple[str, Path], tmp_path: Path
) -> None:
    prometheus_bin = require_program("prometheus")
    url, metrics_dir = two_workers
    statuses = asyncio.run(_calls(url, CALLS))
    assert statuses == [401] * CALLS  # no credentials: refused by the gateway, counted all the same
    config = tmp_path / "prometheus.yml"
    target = url.removeprefix("http://")
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "scrape_configs": [{"job_name": "forecourt", "static_configs": [{"targets": [target]}]}],
            }
        )
    )
    web = free_port()
    prom = subprocess.Popen(
        [
            prometheus_bin,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{web}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    prometheus = f"http://127.0.0.1:{web}"
    try:

        def scraped() -> bool:
            assert prom.poll() is None, prom.stderr.read().decode()[-2000:] if prom.stderr else "exited"
            try:
                return _query(prometheus, 'count_over_time(up{job="forecourt"}[1m]) >= 3') is not None
            except (httpx.TransportError, ValueError):  # not listening yet, or "Service Unavailable" while it starts
                return False

        _wait_until(scraped, 60, "three scrapes")
        rest = 'forecourt_http_requests_total{job="forecourt",door="rest",status="401"}'
        calls = 'forecourt_calls_total{job="forecourt",action="inventory.search",status="401"}'
        # every scrape so far saw all the calls, whichever worker answered it
        assert _query(prometheus, f"min_over_time({rest}[1m])") == CALLS
        assert _query(prometheus, f"max_over_time({rest}[1m])") == CALLS
        assert _query(prometheus, f"sum({calls})") == CALLS
        assert _query(prometheus, 'forecourt_workers{job="forecourt"}') == 2
        assert _query(prometheus, 'forecourt_build_info{job="forecourt"}') == 1
        assert (_query(prometheus, 'process_resident_memory_bytes{job="forecourt"}') or 0) > 0
    finally:
        _stop(prom)
    per_worker = sorted(p.name for p in metrics_dir.glob("counter_*.db"))
    assert len(per_worker) == 2, per_worker  # both workers counted into their own files
