"""The shipped HAProxy config never sends a non-idempotent request twice.

Two replicas that answer /readyz and otherwise close the connection without a response (a replica that died
while running the call): HAProxy may retry a GET on the other one, but a POST reaches one replica once and the
client gets the 502. The replicas are raw sockets so that the empty response is exact.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from deploy.lb import start_haproxy


@dataclass
class DyingReplica:
    """Answers ``GET /readyz`` with 200; reads any other request, records its method, closes without a word."""

    name: str
    sock: socket.socket = field(default_factory=socket.socket)
    seen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            method, path = head.split(b" ", 2)[:2]
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            body = len(head.split(b"\r\n\r\n", 1)[1])
            while length and body < int(length.group(1)):  # read it all: closing then is a clean FIN, not an RST
                chunk = conn.recv(65536)
                if not chunk:
                    return
                body += len(chunk)
            if path == b"/readyz":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                return
            self.seen.append(method.decode())

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def dying(tmp_path: Path) -> Iterator[tuple[str, list[DyingReplica]]]:
    replicas = [DyingReplica("a"), DyingReplica("b")]
    proxy = start_haproxy(replicas, tmp_path)  # type: ignore[arg-type]
    try:
        yield proxy.url, replicas
    finally:
        proxy.stop()
        for replica in replicas:
            replica.close()


def _seen(replicas: list[DyingReplica], method: str) -> int:
    return sum(r.seen.count(method) for r in replicas)


def test_a_post_that_got_an_empty_response_is_not_sent_again(dying: tuple[str, list[DyingReplica]]) -> None:
    url, replicas = dying
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}'
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: forecourt\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    )
    # Headers and body in one write, as most clients send a small call: HAProxy then holds the whole request,
    # which is what lets it retry one at all.
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 502")
    assert _seen(replicas, "POST") == 1


def test_a_get_that_got_an_empty_response_is_tried_again(dying: tuple[str, list[DyingReplica]]) -> None:
    url, replicas = dying
    with httpx.Client(timeout=30) as client:
        response = client.get(f"{url}/dealers/x/.well-known/agent-card.json")
    assert response.status_code == 502
    assert _seen(replicas, "GET") == 3  # the first try and `retries 2`
