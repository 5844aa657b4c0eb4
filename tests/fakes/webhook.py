"""A webhook receiver on loopback that keeps what it was sent (push notifications, deliveries)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from aap.support import LiveServer


class Webhook:
    """Answers every POST to ``/hook`` with 200 and keeps each body with its headers, in arrival order."""

    def __init__(self) -> None:
        self.received: list[tuple[bytes, dict[str, str]]] = []

        async def hook(request: Request) -> JSONResponse:
            self.received.append((await request.body(), dict(request.headers)))
            return JSONResponse({"ok": True})

        self.server = LiveServer(Starlette(routes=[Route("/hook", hook, methods=["POST"])])).start()

    @property
    def url(self) -> str:
        """The receiving URL."""
        return self.server.url + "/hook"
