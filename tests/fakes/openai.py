"""A fake OpenAI-compatible server (what vLLM, Ollama, LM Studio and NVIDIA NIM expose) on loopback.

``POST /v1/chat/completions`` (JSON, or server-sent ``chat.completion.chunk`` events ending in ``data: [DONE]``
when ``stream: true``; a usage chunk when ``stream_options.include_usage``), ``POST /v1/embeddings``
(``encoding_format`` float or base64), ``GET /v1/models``. Errors use OpenAI's body
``{"error": {message, type, param, code}}``.
"""

from __future__ import annotations

import base64
import json
import struct
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .faults import Faults
from .server import LoopbackServer, serve

SECRET_IN_PROVIDER_MESSAGE = "tenant org-internal-42 exceeded shard quota"


def openai_error(status: int, message: str = SECRET_IN_PROVIDER_MESSAGE, code: str | None = None) -> dict[str, Any]:
    """OpenAI's JSON error body."""
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "requests"}
    return {"error": {"message": message, "type": kinds.get(status, "server_error"), "param": None, "code": code}}


def vector(text: str, dims: int = 8) -> list[float]:
    """A deterministic pseudo-embedding."""
    seed = sum(ord(c) for c in text) or 1
    return [round(((seed * (i + 3)) % 97) / 97.0, 6) for i in range(dims)]


class FakeOpenAI:
    """The fake's behaviour and what it saw."""

    def __init__(
        self, *, api_key: str | None = None, models: tuple[str, ...] = ("llama3.1", "nomic-embed-text")
    ) -> None:
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
        self.auth_seen: list[str | None] = []
        self.reply = "Your 2021 Civic is due for an oil change and a tire rotation."

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return self.server.base_url + "/v1"

    def _check(self, request: Request) -> Response | None:
        self.auth_seen.append(request.headers.get("authorization"))
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return JSONResponse(openai_error(401, "Incorrect API key provided", "invalid_api_key"), 401)
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
        model = body.get("model")
        if model not in self.models:
            return JSONResponse(openai_error(404, f"model '{model}' not found", "model_not_found"), 404)
        if not body.get("messages"):
            return JSONResponse(openai_error(400, "messages is required"), 400)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(self.reply.split()),
            "total_tokens": prompt_tokens + len(self.reply.split()),
        }
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(self._sse(model, usage if include_usage else None), media_type="text/event-stream")
        return JSONResponse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.reply},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": usage,
            }
        )

    async def _sse(self, model: str, usage: dict[str, int] | None) -> AsyncIterator[bytes]:
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        words = self.reply.split(" ")
        first = {
            **base,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
        }
        yield f"data: {json.dumps(first)}\n\n".encode()
        for i, word in enumerate(words):
            text = word + (" " if i < len(words) - 1 else "")
            finish = "stop" if i == len(words) - 1 else None
            chunk = {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        if usage is not None:
            yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n".encode()
        yield b"data: [DONE]\n\n"

    async def embeddings(self, request: Request) -> Response:
        early = self._check(request)
        if early is not None:
            return early
        await self.faults.maybe_hang()
        body = json.loads(await request.body())
        self.requests.append(body)
        if body.get("model") not in self.models:
            return JSONResponse(openai_error(404, "model not found", "model_not_found"), 404)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dims = int(body.get("dimensions") or 8)
        data = []
        for i, text in enumerate(texts):
            vec = vector(str(text), dims)
            if body.get("encoding_format") == "base64":
                encoded: Any = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
            else:
                encoded = vec
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(len(str(t).split()) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def list_models(self, request: Request) -> Response:
        early = self._check(request)
        if early is not None:
            return early
        return JSONResponse(
            {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]}
        )

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/embeddings", self.embeddings, methods=["POST"]),
                Route("/v1/models", self.list_models),
            ]
        )


@contextmanager
def fake_openai(**kwargs: Any) -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server."""
    fake = FakeOpenAI(**kwargs)
    with serve(fake.app()) as server:
        fake.server = server
        try:
            yield fake
        finally:
            fake.faults.release()
