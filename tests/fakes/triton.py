"""A fake NVIDIA Triton Inference Server speaking the KServe v2 HTTP/REST inference protocol on loopback.

Endpoints: ``GET /v2/health/live``, ``GET /v2/health/ready``, ``GET /v2/models/{m}[/versions/{v}]`` (metadata),
``GET /v2/models/{m}/ready``,
``POST /v2/repository/index``, ``POST /v2/models/{m}[/versions/{v}]/infer`` with JSON tensors. Errors are KServe v2's
``{"error": "<message>"}``. Models:

- ``add_sub``: INPUT0, INPUT1 (FP32 [1,4]) → OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1;
- ``ensemble``: a TensorRT-LLM-style text model, ``text_input`` (BYTES [1,1]) and ``max_tokens`` (INT32 [1,1]) →
  ``text_output`` (BYTES [1,1]).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .faults import Faults
from .server import LoopbackServer, serve

MODELS: dict[str, dict[str, Any]] = {
    "add_sub": {
        "name": "add_sub",
        "versions": ["1"],
        "platform": "python",
        "inputs": [
            {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4]},
            {"name": "INPUT1", "datatype": "FP32", "shape": [1, 4]},
        ],
        "outputs": [
            {"name": "OUTPUT0", "datatype": "FP32", "shape": [1, 4]},
            {"name": "OUTPUT1", "datatype": "FP32", "shape": [1, 4]},
        ],
    },
    "ensemble": {
        "name": "ensemble",
        "versions": ["1"],
        "platform": "ensemble",
        "inputs": [
            {"name": "text_input", "datatype": "BYTES", "shape": [-1, 1]},
            {"name": "max_tokens", "datatype": "INT32", "shape": [-1, 1]},
        ],
        "outputs": [{"name": "text_output", "datatype": "BYTES", "shape": [-1, 1]}],
    },
}


class FakeTriton:
    """The fake's behaviour and what it saw."""

    def __init__(self) -> None:
        self.server: LoopbackServer | None = None
        self.faults = Faults()
        self.reset()

    def reset(self) -> None:
        """Forget everything a test did (the server keeps running)."""
        self.faults.release()
        self.faults = Faults()
        self.infer_requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        """The path of every request that arrived, in order."""
        self.headers_seen: list[dict[str, str]] = []
        self.metadata_requests = 0
        self.ready = True

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.base_url

    async def live(self, request: Request) -> Response:
        return Response(status_code=200)

    async def health_ready(self, request: Request) -> Response:
        return Response(status_code=200 if self.ready else 503)

    async def metadata(self, request: Request) -> Response:
        self.metadata_requests += 1
        model = MODELS.get(request.path_params["model"])
        if model is None:
            return JSONResponse({"error": f"Request for unknown model: '{request.path_params['model']}'"}, 404)
        return JSONResponse(model)

    async def repository_index(self, request: Request) -> Response:
        ready = [{"name": name, "version": v, "state": "READY"} for name, m in MODELS.items() for v in m["versions"]]
        return JSONResponse(ready)

    async def model_ready(self, request: Request) -> Response:
        return Response(status_code=200 if request.path_params["model"] in MODELS else 400)

    async def infer(self, request: Request) -> Response:
        self.headers_seen.append(dict(request.headers))
        scripted = self.faults.take()
        if scripted is not None:
            return JSONResponse(scripted.body, status_code=scripted.status, headers=scripted.headers)
        await self.faults.maybe_hang()
        name = request.path_params["model"]
        body = json.loads(await request.body())
        self.infer_requests.append(body)
        if name not in MODELS:
            return JSONResponse({"error": f"Request for unknown model: '{name}' is not found"}, 404)
        try:
            outputs = self._run(name, {t["name"]: t for t in body["inputs"]})
        except (KeyError, ValueError, TypeError):
            return JSONResponse({"error": "unexpected inference input"}, 400)
        wanted = [o["name"] for o in body.get("outputs", [])] or [o["name"] for o in outputs]
        if any(o.get("parameters", {}).get("binary_data") for o in body.get("outputs", [])):
            return JSONResponse({"error": "this fake only answers JSON tensors"}, 400)
        version = request.path_params.get("version", "1")
        return JSONResponse(
            {
                "model_name": name,
                "model_version": version,
                "id": body.get("id", ""),
                "outputs": [o for o in outputs if o["name"] in wanted],
            }
        )

    def _run(self, name: str, inputs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        if name == "add_sub":
            a = [float(x) for x in inputs["INPUT0"]["data"]]
            b = [float(x) for x in inputs["INPUT1"]["data"]]
            if len(a) != len(b):
                raise ValueError("shape")
            shape = inputs["INPUT0"]["shape"]
            return [
                {
                    "name": "OUTPUT0",
                    "datatype": "FP32",
                    "shape": shape,
                    "data": [x + y for x, y in zip(a, b, strict=True)],
                },
                {
                    "name": "OUTPUT1",
                    "datatype": "FP32",
                    "shape": shape,
                    "data": [x - y for x, y in zip(a, b, strict=True)],
                },
            ]
        prompt = str(inputs["text_input"]["data"][0])
        max_tokens = int(inputs["max_tokens"]["data"][0]) if "max_tokens" in inputs else 16
        words = f"Triton says: {prompt}".split()[:max_tokens]
        return [{"name": "text_output", "datatype": "BYTES", "shape": [1, 1], "data": [" ".join(words)]}]

    def app(self) -> Any:
        """The ASGI app: the routes, behind a log of every request's path."""
        routes = self.routes()

        async def logged(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.paths.append(str(scope["path"]))
            await routes(scope, receive, send)

        return logged

    def routes(self) -> Starlette:
        infer = self.infer
        return Starlette(
            routes=[
                Route("/v2/health/live", self.live),
                Route("/v2/health/ready", self.health_ready),
                Route("/v2/models/{model}", self.metadata),
                Route("/v2/models/{model}/versions/{version}", self.metadata),
                Route("/v2/models/{model}/ready", self.model_ready),
                Route("/v2/repository/index", self.repository_index, methods=["POST"]),
                Route("/v2/models/{model}/infer", infer, methods=["POST"]),
                Route("/v2/models/{model}/versions/{version}/infer", infer, methods=["POST"]),
            ]
        )


@contextmanager
def fake_triton() -> Iterator[FakeTriton]:
    """A running fake Triton server."""
    fake = FakeTriton()
    with serve(fake.app()) as server:
        fake.server = server
        try:
            yield fake
        finally:
            fake.faults.release()
