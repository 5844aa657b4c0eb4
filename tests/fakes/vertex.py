"""A fake Vertex AI endpoint and Google OAuth token endpoint on loopback.

Speaks what the google-genai SDK in Vertex mode sends: ``POST /v1/projects/{p}/locations/{l}/publishers/google/
models/{model}:generateContent`` (JSON) and ``...:streamGenerateContent?alt=sse`` (server-sent events, one
``GenerateContentResponse`` per ``data:`` line), with Google's error body ``{"error": {code, message, status}}``.
The token endpoint implements the service-account JWT-bearer grant (RFC 7523) that google-auth uses. STS,
``endpoints.predict`` and batch prediction jobs are in ``fakes.vertex_extras``.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .faults import Faults
from .server import LoopbackServer, serve
from .vertex_extras import Extras, routes

SA_EMAIL = "forecourt-vertex@demo-project.iam.gserviceaccount.com"
GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
SECRET_IN_PROVIDER_MESSAGE = "projects/demo-project internal-shard-7 said no"


_KEY: list[rsa.RSAPrivateKey] = []


def service_account_key() -> rsa.RSAPrivateKey:
    """One RSA key per test session (generating one costs tens of milliseconds)."""
    if not _KEY:
        _KEY.append(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    return _KEY[0]


def google_error(code: int, message: str = SECRET_IN_PROVIDER_MESSAGE) -> dict[str, Any]:
    """Google's JSON error body."""
    return {"error": {"code": code, "message": message, "status": GOOGLE_STATUS.get(code, "UNKNOWN")}}


@dataclass
class Tokens:
    """Access tokens the fake token endpoint issued, and which of them the fake Vertex still accepts."""

    expires_in: int = 3600
    issued: list[str] = field(default_factory=list)
    expired: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def mint(self) -> str:
        with self.lock:
            token = f"ya29.fake-{len(self.issued) + 1}"
            self.issued.append(token)
            return token

    def valid(self, token: str) -> bool:
        return token in self.issued and token not in self.expired


@dataclass
class Seen:
    """One generateContent request as the fake received it."""

    model: str
    project: str
    location: str
    stream: bool
    token: str
    body: dict[str, Any]


class FakeVertex:
    """The fake's behaviour and what it saw."""

    def __init__(self) -> None:
        self.key = service_account_key()
        self.server: LoopbackServer | None = None
        self.faults = Faults()
        self.reset()

    def reset(self) -> None:
        """Forget everything a test did (the server keeps running)."""
        self.faults.release()
        self.tokens = Tokens()
        self.faults = Faults()
        self.requests: list[Seen] = []
        self.extras = Extras()
        self.reply = "The 2024 RAV4 Hybrid XLE is in stock at Demo Toyota San Francisco."
        self.require_auth = True

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return self.server.base_url + "/"

    def service_account_info(self) -> dict[str, Any]:
        """A service-account key file whose token_uri points at this fake."""
        pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        assert self.server is not None
        return {
            "type": "service_account",
            "project_id": "demo-project",
            "private_key_id": "fake-key-1",
            "private_key": pem,
            "client_email": SA_EMAIL,
            "client_id": "1000000000000",
            "token_uri": f"{self.server.base_url}/token",
        }

    # ---------------------------------------------------------------------------- routes

    async def token(self, request: Request) -> Response:
        fields = {k: v[0] for k, v in urllib.parse.parse_qs((await request.body()).decode()).items()}
        if fields.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        try:
            claims = jwt.decode(
                fields.get("assertion", ""),
                self.key.public_key(),
                algorithms=["RS256"],
                options={"verify_aud": False},
            )
        except jwt.InvalidTokenError:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        if claims.get("iss") != SA_EMAIL:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        return JSONResponse(
            {"access_token": self.tokens.mint(), "expires_in": self.tokens.expires_in, "token_type": "Bearer"}
        )

    def _authorized(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        token = header.removeprefix("Bearer ").strip()
        if self.require_auth and not self.tokens.valid(token):
            return None
        return token

    async def generate(self, request: Request) -> Response:
        target = request.path_params["target"]
        model, _, method = target.partition(":")
        if method not in ("generateContent", "streamGenerateContent"):
            return JSONResponse(google_error(404), status_code=404)
        token = self._authorized(request)
        if token is None:
            return JSONResponse(google_error(401, "Request had invalid authentication credentials."), status_code=401)
        scripted = self.faults.take()
        if scripted is not None:
            return JSONResponse(scripted.body, status_code=scripted.status, headers=scripted.headers)
        await self.faults.maybe_hang()
        body = json.loads(await request.body())
        stream = method == "streamGenerateContent"
        self.requests.append(
            Seen(
                model=model,
                project=request.path_params["project"],
                location=request.path_params["location"],
                stream=stream,
                token=token,
                body=body,
            )
        )
        if model.startswith("missing-"):
            return JSONResponse(google_error(404), status_code=404)
        if stream:
            if request.query_params.get("alt") != "sse":
                return JSONResponse(google_error(400), status_code=400)
            return StreamingResponse(self._sse(model, body), media_type="text/event-stream")
        return JSONResponse(self._response(model, body, self.reply, final=True))

    def _usage(self, body: dict[str, Any], text: str) -> dict[str, int]:
        prompt = sum(len(p.get("text", "").split()) for c in body.get("contents", []) for p in c.get("parts", []))
        out = len(text.split())
        return {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out}

    def _response(self, model: str, body: dict[str, Any], text: str, *, final: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
        doc: dict[str, Any] = {"candidates": [candidate], "modelVersion": f"{model}-002"}
        if final:
            candidate["finishReason"] = "STOP"
            doc["usageMetadata"] = self._usage(body, self.reply)
        return doc

    async def _sse(self, model: str, body: dict[str, Any]) -> AsyncIterator[bytes]:
        words = self.reply.split(" ")
        pieces = [" ".join(words[i : i + 3]) + (" " if i + 3 < len(words) else "") for i in range(0, len(words), 3)]
        for i, piece in enumerate(pieces):
            doc = self._response(model, body, piece, final=i == len(pieces) - 1)
            yield f"data: {json.dumps(doc)}\r\n\r\n".encode()

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/token", self.token, methods=["POST"]),
                Route(
                    "/v1/projects/{project}/locations/{location}/publishers/google/models/{target}",
                    self.generate,
                    methods=["POST"],
                ),
                *routes(self),
            ]
        )


@contextmanager
def fake_vertex() -> Iterator[FakeVertex]:
    """A running fake Vertex AI + token endpoint."""
    fake = FakeVertex()
    with serve(fake.app()) as server:
        fake.server = server
        try:
            yield fake
        finally:
            fake.faults.release()
