"""The HTTP edge of every request: access log, HTTP metrics per front door, and SSE streams for the drain.

One pure ASGI middleware (no per-request objects beyond a closure and a small note) so that it costs a few
microseconds per request:

- one JSON access-log line per request on the ``forecourt.access`` logger: method, path *template*
  (``/dealers/{dealership_id}/a2a/jsonrpc``, never the concrete path or the query string), status, duration,
  front door, the trace id and the company the gateway resolved. Never a header, a body, a credential or
  anything personal;
- ``forecourt_http_requests_total{door,status}`` and ``forecourt_http_request_duration_seconds{door}``;
- every ``text/event-stream`` response is registered with the app's :class:`~forecourt.lifecycle.Drain`,
  which closes it with a ``retry:`` event when the process drains; while draining, other responses carry
  ``Connection: close`` so that clients and the load balancer open their next connection elsewhere.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import Counter, Histogram
from starlette.routing import BaseRoute, Mount, compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from forecourt import caching
from forecourt.gateway.telemetry import REQUEST_NOTE, Metrics, RequestNote
from forecourt.lifecycle import Drain, SseStream

access_logger = logging.getLogger("forecourt.access")
_CONVERTER = re.compile(r"\{(\w+):\w+\}")

_DOORS = (
    ("/mcp/", "rest"),
    ("/mcp", "mcp"),
    ("/admin", "admin"),
    ("/console", "console"),
    ("/healthz", "health"),
    ("/readyz", "health"),
    ("/metrics", "health"),
    ("/.well-known", "discovery"),
    ("/openapi", "docs"),
)


def door_of(template: str) -> str:
    """The front door a path template belongs to (``rest``, ``mcp``, ``a2a``, ``admin``, ...)."""
    if template.startswith("/dealers/"):
        return "discovery" if "/.well-known/" in template else "a2a"
    for prefix, door in _DOORS:
        if template == prefix or template.startswith(prefix if prefix.endswith("/") else prefix + "/"):
            return door
    return "other" if template != "-" else "unmatched"


class _Templates:
    """Path templates of an app's routes, found from the endpoint Starlette's router put in the scope."""

    def __init__(self, routes: Iterable[BaseRoute]) -> None:
        self._by_endpoint: dict[int, list[tuple[re.Pattern[str], str]]] = {}
        for route in routes:
            path = getattr(route, "path", None)
            if not isinstance(path, str):
                continue
            endpoint: object = None
            if isinstance(route, Mount):
                endpoint, template = route.app, path.rstrip("/") + "/{path}"
            else:
                endpoint, template = getattr(route, "endpoint", None) or getattr(route, "app", None), path
            if endpoint is None:
                continue
            regex = compile_path(template)[0] if "{" in template else re.compile(re.escape(template) + "$")
            template = _CONVERTER.sub(r"{\1}", template)  # "/mcp/{action_name:str}" -> "/mcp/{action_name}"
            self._by_endpoint.setdefault(id(endpoint), []).append((regex, template))

    def template(self, scope: Scope) -> str:
        candidates = self._by_endpoint.get(id(scope.get("endpoint")))
        if not candidates:
            return "-"
        if len(candidates) == 1:
            return candidates[0][1]
        path = scope.get("path", "")
        return next((template for regex, template in candidates if regex.match(path)), candidates[0][1])


class AccessMiddleware:
    """Access log, HTTP metrics and SSE registration for every HTTP request (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, *, metrics: Metrics, drain: Drain, routes: Iterable[BaseRoute], log: bool = True
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.drain = drain
        self.log = log
        self.templates = _Templates(routes)
        # A request's door and series by its route template and status, looked up once: prometheus-client's
        # ``labels`` checks its arguments and takes a lock every time.
        self._series: caching.Cache[tuple[str, int], tuple[str, Counter, Histogram]] = caching.lru(
            "surfaces.access.series", 1024
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        note = RequestNote()
        token = REQUEST_NOTE.set(note)
        state: list[Any] = [500, None]  # status, SseStream
        drain = self.drain
        drain.requests_open += 1

        async def send_wrapper(message: Message) -> None:
            stream: SseStream | None = state[1]
            if stream is not None:
                if stream.closed:  # the drain ended this stream: what the handler still sends goes nowhere
                    return
                await send(message)
                return
            if message["type"] == "http.response.start":
                state[0] = message["status"]
                if _is_event_stream(message):
                    drain.requests_open -= 1  # a stream stays open: not a request being answered
                    stream = state[1] = SseStream(send)
                    await send(message)
                    self.metrics.sse_streams.inc()
                    drain.opened(stream)
                    return
                if drain.draining:
                    message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            REQUEST_NOTE.reset(token)
            stream = state[1]
            if stream is not None:
                drain.finished(stream)
                self.metrics.sse_streams.dec()
            else:
                drain.requests_open -= 1
            self._record(scope, state[0], time.perf_counter() - started, note)

    def _record(self, scope: Scope, status: int, duration: float, note: RequestNote) -> None:
        template = self.templates.template(scope)
        series = self._series.get((template, status))
        if series is None:
            door = door_of(template)
            counted = self.metrics.http_requests.labels(door, str(status))
            series = (door, counted, self.metrics.http_duration.labels(door))
            self._series.put((template, status), series)
        door, counter, histogram = series
        counter.inc()
        histogram.observe(duration)
        if self.log and access_logger.isEnabledFor(logging.INFO):
            method = scope.get("method", "-")
            access_logger.info(
                "%s %s %d",
                method,
                template,
                status,
                extra={
                    "fields": {
                        "method": method,
                        "path": template,
                        "status": status,
                        "duration_ms": round(duration * 1000, 3),
                        "door": door,
                        "trace_id": note.trace_id,
                        "company": note.company,
                    }
                },
            )


def _is_event_stream(message: Message) -> bool:
    for name, value in message.get("headers", ()):
        if name.lower() == b"content-type":
            return bytes(value).startswith(b"text/event-stream")
    return False
