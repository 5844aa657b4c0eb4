"""Probe: ``kill -9`` of a real ``forecourt serve`` under load loses no audit record (issue 11, item 4).

Eight clients submit leads (a side effect) and search inventory (reads) as fast as the server answers; the
server flushes audit to the database only every hour (so everything it has not written is at stake) and is
killed with SIGKILL while calls are in flight. It is then started again on the same database and journal
folder. Counted afterwards:

- every call that was answered has its audit record (by the trace id the client sent);
- every lead that committed has an audit record of a successful ``leads.create``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from gateway.support import CURSOR_SECRET, PEPPER, TOYOTA, Template

FORECOURT = str(Path(sys.executable).with_name("forecourt"))
CLIENTS = 8
ANSWERS_BEFORE_KILL = 120


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
            "FORECOURT_API_KEY_PEPPER": PEPPER,
            "FORECOURT_CURSOR_SECRET": CURSOR_SECRET,
            "FORECOURT_AUDIT_FLUSH_INTERVAL_S": "3600",
            "FORECOURT_AUDIT_BATCH_SIZE": "100000",
            "FORECOURT_LOG_LEVEL": "WARNING",
            "FORECOURT_RATE_COMPANY_PER_MINUTE": "10000000",
            "FORECOURT_RATE_MEMBER_PER_MINUTE": "10000000",
            "FORECOURT_RATE_ACTION_PER_MINUTE": "10000000",
        }
    )
    return env


def _start(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([FORECOURT, "serve", "--dev"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90.0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"the server exited during startup: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
            )
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the server did not become ready")


async def _load(port: int, key: str, answered: list[str], enough: asyncio.Event) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=10.0) as client:

        async def worker(n: int) -> None:
            i = 0
            while True:
                i += 1
                trace = uuid.uuid4().hex
                if i % 2:
                    payload = {
                        "dealership_id": TOYOTA,
                        "customer": {
                            "first_name": "Kill",
                            "last_name": f"Nine{n}-{i}",
                            "email": f"k{trace}@example.com",
                        },
                        "consent": {"scope": ["lead_submission"], "allowed_channels": ["email"]},
                        "message": f"killtest {trace}",
                    }
                    action = "leads.create"
                else:
                    payload, action = {"dealership_id": TOYOTA}, "inventory.search"
                body = {"id": trace, "caller": {"traceId": trace}, "payload": payload}
                try:
                    response = await client.post(f"/mcp/{action}", json=body)
                except httpx.TransportError:
                    return  # the server is gone
                if response.status_code == 200:
                    answered.append(trace)
                    if len(answered) >= ANSWERS_BEFORE_KILL:
                        enough.set()

        await asyncio.gather(*(worker(n) for n in range(CLIENTS)))


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _all_gone(pids: list[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def _run_and_kill(port: int, key: str, proc: subprocess.Popen[bytes]) -> tuple[list[str], list[int]]:
    answered: list[str] = []
    enough = asyncio.Event()
    load = asyncio.create_task(_load(port, key, answered, enough))
    async with asyncio.timeout(120):
        await enough.wait()
    helpers = _children(proc.pid)  # the journal's fsync helper
    os.kill(proc.pid, signal.SIGKILL)  # mid-load: calls are in flight
    async with asyncio.timeout(60):
        await load
    return answered, helpers


@pytest.mark.slow
async def test_kill_9_under_load_loses_no_audit_record(hostile_template: Template, tmp_path: Path) -> None:
    db = hostile_template.copy_to(tmp_path)
    port = _free_port()
    env = _env(db, port)
    proc = _start(env, port)
    try:
        answered, helpers = await _run_and_kill(port, hostile_template.keys["crm"], proc)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert len(answered) >= ANSWERS_BEFORE_KILL
    assert helpers, "the server runs its journal's fsync helper"
    assert _all_gone(helpers, within_s=30.0), "the fsync helper outlived its killed server"
    restarted = _start(env, port)  # replays the dead process's journal before it serves
    restarted.send_signal(signal.SIGTERM)
    restarted.wait(timeout=60)
    with sqlite3.connect(db) as conn:
        traces = {row[0] for row in conn.execute("SELECT trace_id FROM audit_records")}
        committed = conn.execute("SELECT count(*) FROM leads WHERE message LIKE 'killtest %'").fetchone()[0]
        audited_leads = conn.execute(
            "SELECT count(*) FROM audit_records WHERE action = 'leads.create' AND result_class = 'ok'"
            " AND surface = 'rest'"
        ).fetchone()[0]
    lost = [t for t in answered if t not in traces]
    print(f"kill -9: {len(answered)} answered, {len(lost)} lost; {committed} leads committed, {audited_leads} audited")
    assert lost == [], f"{len(lost)} of {len(answered)} answered calls have no audit record"
    assert committed > 0
    assert audited_leads >= committed, f"{committed - audited_leads} committed leads have no audit record"
