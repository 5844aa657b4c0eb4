"""SIGTERM on a real ``forecourt serve``: stop accepting, finish in-flight calls, flush audit, exit in bounded time.

The in-flight call is real: a request whose body is still arriving when the signal lands (the client sends
half of it, the signal is sent, then the rest). Audit records are only flushed at exit here (a long flush
interval), so the row count after exit proves that shutdown wrote them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

FORECOURT = str(Path(sys.executable).with_name("forecourt"))
DRAIN_TIMEOUT_S = 5.0
EXIT_MARGIN_S = 10.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(db: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORECOURT_")}
    env.update(
        {
            "FORECOURT_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "FORECOURT_PORT": str(port),
            "FORECOURT_API_KEY_PEPPER": "sigterm-test-pepper-0123456789",
            "FORECOURT_AUDIT_FLUSH_INTERVAL_S": "3600",
            "FORECOURT_AUDIT_BATCH_SIZE": "100000",
            "FORECOURT_DRAIN_TIMEOUT_S": str(DRAIN_TIMEOUT_S),
            # No drain period: the listener closes at once (tests/deploy/test_load_balancer.py drains with one).
            "FORECOURT_DRAIN_PERIOD_S": "0",
            "FORECOURT_LOG_LEVEL": "WARNING",
            "FORECOURT_BOOTSTRAP_OPERATOR_KEY": "false",  # its audited creation would add a row to the count below
        }
    )
    return env


def _wait_ready(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited during startup"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    pytest.fail("the server did not become ready")


def _refuses_connections(port: int, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                pass
        except OSError:
            return True
        time.sleep(0.02)
    return False


def _audit_rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM audit_records").fetchone()[0])


def test_sigterm_refuses_new_connections_finishes_in_flight_calls_flushes_audit_and_exits_in_time(
    tmp_path: Path,
) -> None:
    db = tmp_path / "forecourt.db"
    port = _free_port()
    env = _env(db, port)
    subprocess.run([FORECOURT, "db", "upgrade"], env=env, check=True, capture_output=True, timeout=120)
    subprocess.run([FORECOURT, "demo", "--vehicles", "12"], env=env, check=True, capture_output=True, timeout=120)
    made = subprocess.run(
        [FORECOURT, "keys", "create", "--company", "demo-motor-group", "--member", "crm-agent", "--json"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    key = json.loads(made.stdout)["key"]
    before = _audit_rows(db)  # creating the key is audited too
    proc = subprocess.Popen([FORECOURT, "serve", "--dev"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_ready(port, proc)
        served = 5
        for _ in range(served):
            ok = httpx.post(
                f"http://127.0.0.1:{port}/mcp/inventory.search",
                json={"payload": {"dealership_id": "demo-toyota-sf"}},
                headers={"Authorization": f"Bearer {key}"},
            )
            assert ok.status_code == 200
        body = json.dumps({"id": "in-flight", "payload": {"dealership_id": "demo-toyota-sf"}}).encode()
        half = len(body) // 2
        in_flight = socket.create_connection(("127.0.0.1", port))
        in_flight.sendall(
            b"POST /mcp/inventory.search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body[:half]
        )
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert _refuses_connections(port), "a new connection was accepted after SIGTERM"
        in_flight.sendall(body[half:])
        in_flight.settimeout(DRAIN_TIMEOUT_S + EXIT_MARGIN_S)
        response = b""
        while chunk := in_flight.recv(65536):
            response += chunk
        in_flight.close()
        assert response.startswith(b"HTTP/1.1 200"), response[:200]
        code = proc.wait(timeout=DRAIN_TIMEOUT_S + EXIT_MARGIN_S)
        assert time.monotonic() - signalled < DRAIN_TIMEOUT_S + EXIT_MARGIN_S
        # uvicorn re-raises the captured SIGTERM once it has shut down cleanly, so the exit status names it.
        assert code in (0, -signal.SIGTERM), proc.stderr.read().decode()[-2000:] if proc.stderr else code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _audit_rows(db) == before + served + 1
