"""Real HAProxy (deploy/haproxy/haproxy.cfg, the file shipped) in front of real ``forecourt serve`` replicas."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from deploy.support import DEPLOY, free_port, require_program
from replicas.support import Replica

TRUSTED = '["127.0.0.1/32"]'


def lb_env(database_url: str, redis_url: str, prefix: str, public_url: str) -> dict[str, str]:
    """Replica settings behind the load balancer: it is trusted for X-Forwarded-For; short drain for tests."""
    from replicas.support import replica_env

    env = replica_env(database_url, redis_url, prefix, public_url)
    env |= {
        "FORECOURT_TRUSTED_PROXIES": TRUSTED,
        "FORECOURT_RATE_ANONYMOUS_PER_MINUTE": "2",
        "FORECOURT_DRAIN_PERIOD_S": "3",
        "FORECOURT_DRAIN_TIMEOUT_S": "5",
        "FORECOURT_MCP_SSE_PING_S": "1",
        "FORECOURT_ACCESS_LOG": "true",
        "FORECOURT_LOG_LEVEL": "INFO",
    }
    return env


@dataclass
class HAProxy:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def start_haproxy(replicas: list[Replica], log_dir: Path) -> HAProxy:
    """HAProxy with the shipped config; its addresses (and a fast health check) from the environment."""
    binary = require_program("haproxy", "/usr/sbin/haproxy")
    port = free_port()
    env = {
        **os.environ,
        "FORECOURT_LB_BIND": f"127.0.0.1:{port}",
        "FORECOURT_REPLICA_1": f"127.0.0.1:{replicas[0].port}",
        "FORECOURT_REPLICA_2": f"127.0.0.1:{replicas[1].port}",
        "FORECOURT_LB_CHECK_INTER": "300ms",
    }
    log = log_dir / f"haproxy-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [binary, "-db", "-f", str(DEPLOY / "haproxy" / "haproxy.cfg")], env=env, stdout=out, stderr=out
        )
    proxy = HAProxy(process, port, log)
    deadline = time.monotonic() + 20
    while True:
        assert process.poll() is None, log.read_text()[-2000:]
        try:
            if httpx.get(f"{proxy.url}/readyz", timeout=2).status_code == 200:
                return proxy
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"HAProxy not serving: {log.read_text()[-2000:]}")
        time.sleep(0.05)  # the polling interval of a bounded wait
