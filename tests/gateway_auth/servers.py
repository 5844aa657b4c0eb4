"""Real HTTP servers on loopback: a JWKS endpoint and a Google-style OAuth token endpoint."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[str, str, bytes], tuple[int, dict[str, Any]]]


class LoopbackServer:
    """A threaded http.server bound before it starts, so requests queue in the backlog (no start-up wait)."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[tuple[str, str]] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append((method, self.path))
                status, document = handler(method, self.path, body)
                payload = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def count(self, path: str) -> int:
        return sum(1 for _, p in self.requests if p == path)


@contextmanager
def serve(handler: Handler) -> Iterator[LoopbackServer]:
    server = LoopbackServer(handler)
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        server.thread.join(timeout=5)


def form(body: bytes) -> dict[str, str]:
    return {k: v[0] for k, v in urllib.parse.parse_qs(body.decode()).items()}
