"""Probe: idempotency and rate limits across two replicas when Redis restarts mid-run.

Two replicas share one database and a dedicated ``redis-server`` (its own free port and folder, started here,
append-only file fsync'd on every write). Midway the Redis process is stopped and started again:

- a lead submitted on replica A with an idempotency key is replayed, not created again, by replica B after
  the restart (one lead, same id, ``Idempotent-Replayed``);
- while Redis is down, a side-effect call with an idempotency key is refused (``503``), never run unshared;
- a company rate limit keeps counting across the restart on both replicas (the counter lives in Redis).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from gateway.support import MOTOR, TOYOTA, Rig, Template, set_policy, start_rig, stop_rig

from .support import IN_CI

REDIS = shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisProcess:
    """A redis-server of this test's own, restartable, persisting every write."""

    def __init__(self, directory: Path) -> None:
        self.port = _free_port()
        self.directory = directory
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS is not None
        args = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)]
        args += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if redis.Redis(port=self.port, socket_timeout=0.5).ping():
                    return
            except redis.RedisError:
                time.sleep(0.02)
        pytest.fail("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None


@pytest.fixture
def redis_process(tmp_path: Path) -> Iterator[RedisProcess]:
    if REDIS is None:
        if IN_CI:
            pytest.fail("redis-server is required in CI")
        pytest.skip("redis-server is not installed")
    made = RedisProcess(tmp_path)
    made.start()
    try:
        yield made
    finally:
        made.stop()


def _lead(n: int) -> dict[str, Any]:
    return {
        "dealership_id": TOYOTA,
        "customer": {"first_name": "Red", "last_name": f"Is{n}", "email": f"redis{n}@example.com"},
        "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"]},
    }


async def _replicas(template: Template, tmp_path: Path, url: str) -> tuple[Rig, Rig]:
    db = template.copy_to(tmp_path)

    async def prepare(store: Any) -> None:
        await set_policy(store, MOTOR, rate_limits={"company_per_minute": 8})

    common = {"redis_url": url, "redis_prefix": "probe:", "rate_limit_fail_mode": "open"}
    a = await start_rig(template, tmp_path, db=db, prepare=prepare, instance_name="replica-a", **common)
    b = await start_rig(template, tmp_path, db=db, instance_name="replica-b", **common)
    return a, b


async def _until_redis_answers(rig: Rig) -> None:
    async with asyncio.timeout(30):
        while (  # noqa: ASYNC110 - a bounded poll of a real server coming back
            await rig.call("leads.create", _lead(99), headers={"Idempotency-Key": "probe-ready"})
        ).status_code == 503:
            await asyncio.sleep(0.05)


async def test_idempotency_and_rate_limits_hold_across_two_replicas_and_a_redis_restart(
    hostile_template: Template, tmp_path: Path, redis_process: RedisProcess
) -> None:
    a, b = await _replicas(hostile_template, tmp_path, redis_process.url)
    try:
        first = await a.call("leads.create", _lead(1), headers={"Idempotency-Key": "same-lead"})
        assert first.status_code == 200, first.text
        lead_id = first.json()["result"]["output"]["id"]
        used = 1

        redis_process.stop()
        down = await b.call("leads.create", _lead(2), headers={"Idempotency-Key": "during-outage"})
        assert down.status_code == 503
        redis_process.start()
        await _until_redis_answers(b)
        used += 1  # the readiness probe's own call

        replayed = await b.call("leads.create", _lead(1), headers={"Idempotency-Key": "same-lead"})
        assert replayed.status_code == 200, replayed.text
        assert replayed.json()["result"]["output"]["id"] == lead_id
        assert replayed.headers.get("idempotent-replayed") == "true"
        used += 1

        statuses = []
        for n in range(8):
            replica = a if n % 2 else b
            statuses.append((await replica.call("inventory.search", {"dealership_id": TOYOTA})).status_code)
        allowed = statuses.count(200)
        assert allowed == 8 - used, statuses  # the company's 8 per minute, counted across restart and replicas
        assert set(statuses) <= {200, 429}
    finally:
        await stop_rig(a)
        await stop_rig(b)
