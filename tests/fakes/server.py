"""Run an ASGI app with uvicorn on a loopback port in a background thread (real sockets, real HTTP)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

START_TIMEOUT_S = 10.0


class LoopbackServer:
    """A uvicorn server bound to ``127.0.0.1`` on a free port, in its own thread and event loop."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.serve(sockets=[self.sock]))
        self.loop.close()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:  # bounded wait for the listener, not a fixed sleep
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("loopback server did not start")
            time.sleep(0.005)

    def stop(self) -> None:
        self.request_stop()
        self.join()

    def request_stop(self) -> None:
        """Ask the server to exit (several servers stop in parallel: request all, then join all)."""
        self.server.should_exit = True

    def join(self) -> None:
        self.thread.join(timeout=10)
        self.sock.close()


@contextmanager
def serve(app: Any) -> Iterator[LoopbackServer]:
    """Serve ``app`` for the duration of the block."""
    server = LoopbackServer(app)
    server.start()
    try:
        yield server
    finally:
        server.stop()
