"""A fake Anthropic Messages API on loopback, written from Anthropic's published API reference.

``POST /v1/messages`` with the key in ``x-api-key`` (or ``Authorization: Bearer``) and ``anthropic-version``;
body ``{model, max_tokens, messages, system?, temperature?, top_p?, top_k?, stop_sequences?, stream?}``. The answer
is a ``message`` object (``content: [{type: text, text}]``, ``stop_reason``, ``usage: {input_tokens,
output_tokens}``), or with ``stream: true`` server-sent events: ``message_start``, ``content_block_start``,
``ping``, ``content_block_delta`` (``text_delta``) per piece, ``content_block_stop``, ``message_delta``
(``stop_reason``, ``usage.output_tokens``), ``message_stop``. Errors are
``{"type": "error", "error": {"type", "message"}}`` (529 ``overloaded_error``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .faults import Faults
from .server import LoopbackServer, serve

SECRET_IN_PROVIDER_MESSAGE = "org-internal-7 is over its workspace spend limit"
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def anthropic_error(status: int, message: str = SECRET_IN_PROVIDER_MESSAGE) -> dict[str, Any]:
    """Anthropic's JSON error body."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def _tokens(text: str) -> int:
    return len(text.split())


class FakeAnthropic:
    """The fake's behaviour and what it saw."""

    def __init__(self, *, api_key: str, models: tuple[str, ...] = ("claude-sonnet-4-6", "claude-haiku-4-5")) -> None:
        self.api_key = api_key
        self.models = models
        self.server: LoopbackServer | None = None
        self.faults = Faults()
        self.reset()

    def reset(self) -> None:
        """Forget everything a test did (the server keeps running)."""
        self.faults.release()
        self.faults = Faults()
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.reply = "Thanks for test-driving the RAV4. Shall we hold it for you until Saturday?"

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return self.server.base_url

    async def messages(self, request: Request) -> Response:
        self.headers_seen.append(dict(request.headers))
        presented = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        if presented != self.api_key:
            return JSONResponse(anthropic_error(401, "invalid x-api-key"), 401)
        if not request.headers.get("anthropic-version"):
            return JSONResponse(anthropic_error(400, "anthropic-version header is required"), 400)
        scripted = self.faults.take()
        if scripted is not None:
            return JSONResponse(scripted.body, status_code=scripted.status, headers=scripted.headers)
        await self.faults.maybe_hang()
        body = json.loads(await request.body())
        self.requests.append(body)
        if not isinstance(body.get("max_tokens"), int):
            return JSONResponse(anthropic_error(400, "max_tokens: Field required"), 400)
        if body.get("model") not in self.models:
            return JSONResponse(anthropic_error(404, f"model: {body.get('model')}"), 404)
        messages = body.get("messages") or []
        if not messages or messages[0].get("role") != "user" or any(m.get("role") == "system" for m in messages):
            return JSONResponse(anthropic_error(400, "messages: first message must use the user role"), 400)
        input_tokens = sum(_tokens(str(m.get("content", ""))) for m in messages) + _tokens(str(body.get("system", "")))
        if body.get("stream"):
            return StreamingResponse(self._events(body["model"], input_tokens), media_type="text/event-stream")
        return JSONResponse(
            {
                "id": "msg_fake01",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": self.reply}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": _tokens(self.reply)},
            }
        )

    async def _events(self, model: str, input_tokens: int) -> AsyncIterator[bytes]:
        def event(name: str, data: dict[str, Any]) -> bytes:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        start = {
            "id": "msg_fake02",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }
        yield event("message_start", {"type": "message_start", "message": start})
        yield event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        yield event("ping", {"type": "ping"})
        words = self.reply.split(" ")
        for i, word in enumerate(words):
            text = word + (" " if i < len(words) - 1 else "")
            delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
            yield event("content_block_delta", delta)
        yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": _tokens(self.reply)},
            },
        )
        yield event("message_stop", {"type": "message_stop"})

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/messages", self.messages, methods=["POST"])])


@contextmanager
def fake_anthropic(**kwargs: Any) -> Iterator[FakeAnthropic]:
    """A running fake Anthropic API."""
    fake = FakeAnthropic(**kwargs)
    with serve(fake.app()) as server:
        fake.server = server
        try:
            yield fake
        finally:
            fake.faults.release()
