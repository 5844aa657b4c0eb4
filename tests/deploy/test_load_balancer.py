"""The shipped HAProxy config in front of two real replicas: round robin, /readyz health checks, SSE streams
and X-Forwarded-For; and a replica drained behind it on SIGTERM without a failed call."""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import socket
import time

import asyncpg
import httpx
import pytest

from aap.support import message
from deploy.conftest import Site
from deploy.lb import start_haproxy
from replicas.support import TOYOTA, start_replica, stop_replica, wait_ready

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

A2A = {"A2A-Version": "1.0"}


def _rest(client: httpx.Client, site: Site, **headers: str) -> httpx.Response:
    return client.post(
        f"{site.url}/mcp/inventory.search",
        json={"payload": {"dealership_id": TOYOTA, "limit": 2}},
        headers={"Authorization": f"Bearer {site.keys['crm']}", **headers},
    )


def _served_by(response: httpx.Response) -> str:
    return str(response.json()["audit"]["processedBy"])


def test_the_load_balancer_sends_consecutive_calls_to_both_replicas_in_turn(lb_site: Site) -> None:
    with httpx.Client(timeout=10) as client:
        responses = [_rest(client, lb_site) for _ in range(4)]
    assert [r.status_code for r in responses] == [200] * 4
    served = [_served_by(r) for r in responses]
    assert set(served) == {"replica-a", "replica-b"}
    assert all(a != b for a, b in itertools.pairwise(served)), (served, lb_site.haproxy.log.read_text()[-1500:])


def test_the_load_balancer_health_checks_each_replica_on_readyz(lb_site: Site) -> None:
    def checks(name: str) -> int:
        log = next(r for r in lb_site.replicas if r.name == name).log.read_text()
        return sum(1 for line in log.splitlines() if '"path":"/readyz"' in line.replace(" ", ""))

    deadline = time.monotonic() + 20
    while min(checks("replica-a"), checks("replica-b")) < 3:
        assert time.monotonic() < deadline, "HAProxy's /readyz checks did not reach both replicas"
        time.sleep(0.1)  # the polling interval of a bounded wait


def test_x_forwarded_for_from_the_trusted_load_balancer_names_the_client(lb_site: Site) -> None:
    # Anonymous callers are limited per client address (2 per minute here). Through the load balancer every
    # connection comes from 127.0.0.1; only X-Forwarded-For tells the clients apart.
    body = {"message": message("dealer.information", {"type": "dealer.information.request"})}
    url = f"{lb_site.url}/dealers/{TOYOTA}/a2a/message:send"
    with httpx.Client(timeout=10) as client:
        first = [client.post(url, json=body, headers={**A2A, "X-Forwarded-For": "203.0.113.7"}) for _ in range(3)]
        other = client.post(url, json=body, headers={**A2A, "X-Forwarded-For": "203.0.113.8"})
    assert [r.status_code for r in first] == [200, 200, 429]
    assert other.status_code == 200


async def _legacy_session(client: httpx.AsyncClient, url: str, key: str) -> str:
    response = await client.post(
        f"{url}/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        headers={
            "Authorization": f"Bearer {key}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        },
    )
    assert response.status_code == 200, response.text
    return str(response.headers["mcp-session-id"])


class _Stream:
    """One MCP standalone GET stream, read line by line in the background."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ended = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def run(self, client: httpx.AsyncClient, url: str, key: str, session: str, opened: asyncio.Event) -> None:
        headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
            "Mcp-Session-Id": session,
        }
        try:
            async with client.stream("GET", f"{url}/mcp", headers=headers) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                opened.set()
                async for line in response.aiter_lines():
                    self.lines.append(line)
        finally:
            self.ended.set()


async def _open_stream(client: httpx.AsyncClient, url: str, key: str, *, session_from: str | None = None) -> _Stream:
    session = await _legacy_session(client, session_from or url, key)  # sessions open on any replica
    return await _open_session_stream(client, url, key, session)


async def _open_session_stream(client: httpx.AsyncClient, url: str, key: str, session: str) -> _Stream:
    stream, opened = _Stream(), asyncio.Event()
    stream.task = asyncio.create_task(stream.run(client, url, key, session, opened))
    async with asyncio.timeout(15):
        await opened.wait()
    return stream


async def test_sse_streams_pass_through_the_load_balancer_as_they_are_written(lb_site: Site) -> None:
    async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=30)) as client:
        stream = await _open_stream(client, lb_site.url, lb_site.keys["crm"])
        try:
            async with asyncio.timeout(15):  # keep-alive pings every FORECOURT_MCP_SSE_PING_S (1 s here)
                while sum(1 for line in stream.lines if line.startswith(":")) < 2:  # noqa: ASYNC110 - bounded poll
                    await asyncio.sleep(0.05)
            assert not stream.ended.is_set()
        finally:
            assert stream.task is not None
            stream.task.cancel()


def _half_sent_call(port: int, key: str) -> tuple[socket.socket, bytes]:
    """A call whose body is still arriving: headers and half the body now, the rest later."""
    body = json.dumps({"id": "in-flight", "payload": {"dealership_id": TOYOTA, "limit": 1}}).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /mcp/inventory.search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body[: len(body) // 2]
    )
    return sock, body[len(body) // 2 :]


async def _audited_by(database_url: str, instance: str) -> int:
    conn = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        return int(await conn.fetchval("SELECT count(*) FROM audit_records WHERE processed_by = $1", instance))
    finally:
        await conn.close()


async def test_a_replica_drains_behind_the_load_balancer_on_sigterm_without_a_failed_call(lb_site: Site) -> None:
    replica_a = lb_site.replicas[0]
    replica_c = start_replica("replica-c", lb_site.env, lb_site.logs)
    haproxy = None
    try:
        await asyncio.to_thread(wait_ready, replica_c, 120.0)
        haproxy = await asyncio.to_thread(start_haproxy, [replica_a, replica_c], lb_site.logs)
        key = lb_site.keys["crm"]
        database_url = lb_site.env["FORECOURT_DATABASE_URL"]
        async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=30)) as client:
            # Sessions are opened directly on a replica so that the two GETs through the load balancer are
            # consecutive: round robin puts one stream on each replica.
            sessions = [await _legacy_session(client, replica_a.url, key) for _ in range(2)]
            streams = [await _open_session_stream(client, haproxy.url, key, session) for session in sessions]
            in_flight, rest_of_body = _half_sent_call(replica_c.port, key)
            signalled = time.monotonic()
            replica_c.process.send_signal(signal.SIGTERM)

            # readiness goes at once, with the reason; the listener still serves
            ready: httpx.Response | None = None
            async with asyncio.timeout(5):
                while ready is None or ready.status_code != 503:
                    ready = await client.get(f"{replica_c.url}/readyz")
            assert ready.json()["checks"]["draining"]["status"] == "draining"
            assert (await client.get(f"{replica_c.url}/healthz")).status_code == 200

            # the stream on the draining replica is told to reconnect and ends; the other one stays open
            async with asyncio.timeout(5):
                await asyncio.wait(
                    [asyncio.create_task(s.ended.wait()) for s in streams], return_when="FIRST_COMPLETED"
                )
            ended = [s for s in streams if s.ended.is_set()]
            assert len(ended) == 1
            assert "retry: 1000" in ended[0].lines
            open_stream = next(s for s in streams if not s.ended.is_set())

            # calls through the load balancer never fail while the replica drains and goes
            served: list[str] = []
            while replica_c.process.poll() is None:
                response = await client.post(
                    f"{haproxy.url}/mcp/inventory.search",
                    json={"payload": {"dealership_id": TOYOTA, "limit": 1}},
                    headers={"Authorization": f"Bearer {key}"},
                )
                assert response.status_code == 200, response.text
                served.append(str(response.json()["audit"]["processedBy"]))
                if len(served) == 5:  # the in-flight call's body arrives while the drain is under way
                    in_flight.sendall(rest_of_body)
                assert time.monotonic() - signalled < 30, "the replica did not exit"
            assert replica_c.process.wait(timeout=5) in (0, -signal.SIGTERM)
            assert set(served[-3:]) == {"replica-a"}  # the load balancer took it out of the rotation
            assert not open_stream.ended.is_set()
            for stream in streams:
                assert stream.task is not None
                stream.task.cancel()

        in_flight.settimeout(10)
        answer = b""
        while chunk := in_flight.recv(65536):
            answer += chunk
        in_flight.close()
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        # every call the drained replica answered was audited before it exited (the in-flight one too)
        calls_on_c = served.count("replica-c") + 1
        assert await _audited_by(database_url, "replica-c") == calls_on_c
    finally:
        if haproxy is not None:
            haproxy.stop()
        stop_replica(replica_c)
