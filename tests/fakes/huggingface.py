"""A fake Hugging Face Inference Endpoint on loopback, written from the published references of Text Generation
Inference (TGI) and Text Embeddings Inference (TEI).

- ``POST /v1/chat/completions``: TGI's Messages API (OpenAI's chat shape; with ``stream: true`` server-sent
  ``chat.completion.chunk`` events ending in ``data: [DONE]``, a usage chunk when ``stream_options.include_usage``).
- ``POST /``: feature extraction, ``{"inputs": str | [str], "normalize"?, "truncate"?}`` → one vector per input.
- Errors are TGI's ``{"error": message, "error_type": kind}`` (422 ``validation``, 503 while the model loads, 429
  ``overloaded``); a protected endpoint answers 401 without ``Authorization: Bearer hf_...``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .faults import Faults
from .openai import vector
from .server import LoopbackServer, serve

SECRET_IN_PROVIDER_MESSAGE = "shard 3 of endpoint acme-internal-llm ran out of KV cache"


def tgi_error(status: int, message: str = SECRET_IN_PROVIDER_MESSAGE) -> dict[str, Any]:
    """TGI's JSON error body."""
    kinds = {422: "validation", 429: "overloaded", 503: "unhealthy", 424: "generation"}
    return {"error": message, "error_type": kinds.get(status, "generation")}


class FakeInferenceEndpoint:
    """The fake's behaviour and what it saw."""

    def __init__(self, *, token: str | None = None) -> None:
        self.token = token
        self.server: LoopbackServer | None = None
        self.faults = Faults()
        self.reset()

    def reset(self) -> None:
        """Forget everything a test did (the server keeps running)."""
        self.faults.release()
        self.faults = Faults()
        self.requests: list[dict[str, Any]] = []
        self.auth_seen: list[str | None] = []
        self.reply = "Your brakes need new pads; we have a slot on Tuesday at 9."

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.base_url

    def _check(self, request: Request) -> Response | None:
        self.auth_seen.append(request.headers.get("authorization"))
        if self.token is not None and request.headers.get("authorization") != f"Bearer {self.token}":
            return JSONResponse({"error": "Authorization header is correct, but the token seems invalid"}, 401)
        scripted = self.faults.take()
        if scripted is not None:
            return JSONResponse(scripted.body, status_code=scripted.status, headers=scripted.headers)
        return None

    async def chat(self, request: Request) -> Response:
        early = self._check(request)
        if early is not None:
            return early
        await self.faults.maybe_hang()
        body = json.loads(await request.body())
        self.requests.append(body)
        if not body.get("messages"):
            return JSONResponse(tgi_error(422, "Input validation error: `messages` must not be empty"), 422)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        completion_tokens = len(self.reply.split())
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        model = str(body.get("model") or "tgi")
        if body.get("stream"):
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(self._sse(model, usage if include else None), media_type="text/event-stream")
        return JSONResponse(
            {
                "object": "chat.completion",
                "id": "",
                "created": int(time.time()),
                "model": model,
                "system_fingerprint": "3.3.6-native",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.reply},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
        )

    async def _sse(self, model: str, usage: dict[str, int] | None) -> AsyncIterator[bytes]:
        base = {
            "object": "chat.completion.chunk",
            "id": "",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "3.3.6-native",
        }
        words = self.reply.split(" ")
        for i, word in enumerate(words):
            text = word + (" " if i < len(words) - 1 else "")
            finish = "stop" if i == len(words) - 1 else None
            choice = {"index": 0, "delta": {"role": "assistant", "content": text}, "logprobs": None}
            chunk = {**base, "choices": [{**choice, "finish_reason": finish}]}
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        if usage is not None:
            yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n".encode()
        yield b"data: [DONE]\n\n"

    async def embed(self, request: Request) -> Response:
        early = self._check(request)
        if early is not None:
            return early
        await self.faults.maybe_hang()
        body = json.loads(await request.body())
        self.requests.append(body)
        inputs = body.get("inputs")
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not texts:
            return JSONResponse(tgi_error(422, "`inputs` cannot be empty"), 422)
        return JSONResponse([vector(str(t)) for t in texts])

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/", self.embed, methods=["POST"]),
            ]
        )


@contextmanager
def fake_inference_endpoint(**kwargs: Any) -> Iterator[FakeInferenceEndpoint]:
    """A running fake Inference Endpoint."""
    fake = FakeInferenceEndpoint(**kwargs)
    with serve(fake.app()) as server:
        fake.server = server
        try:
            yield fake
        finally:
            fake.faults.release()
