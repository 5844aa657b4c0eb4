"""``nvidia.runInference``: NVIDIA Triton Inference Server (KServe v2) and NVIDIA NIM (OpenAI-compatible).

Backend ``triton`` (``tritonclient.http.aio``):

- raw tensors: ``inputs: [{name, datatype, shape, data}]`` → ``POST /v2/models/{m}[/versions/{v}]/infer`` →
  ``model.inference`` with ``output{model_name, model_version, outputs: [{name, datatype, shape, data}]}``;
  output names come from ``outputs`` or, when omitted, from the model's metadata (``GET /v2/models/{m}``, cached);
- a text prompt (``input``/``messages``): sent to a text-generation model (TensorRT-LLM or vLLM ensemble) as the
  configured ``text_input`` BYTES tensor (plus ``max_tokens``) → ``model.textCompletion`` from ``text_output``.

Tensors travel as JSON (``binary_data: false``), which every KServe v2 server understands. Triton's HTTP
protocol does not stream, so ``stream: true`` is answered in one piece (``metadata.stream: false``).

Backend ``nim``: chat completions and embeddings through the OpenAI-compatible API of a NIM (build.nvidia.com or
self-hosted), streamed when asked.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from forecourt import caching
from forecourt.adapters.models.common import (
    INFERENCE_RESULT,
    LoopLocal,
    ModelChunk,
    ModelRequest,
    auth_headers,
    checked_endpoint,
    parse_request,
    text_result,
)
from forecourt.adapters.models.gpu_quota import GpuQuota
from forecourt.adapters.models.jobs import JobActions
from forecourt.adapters.models.nvidia_admin import ADMIN_ACTIONS, NvidiaAdmin
from forecourt.adapters.models.nvidia_finetune import CustomizerJobs, JobSlots
from forecourt.adapters.models.openai_compat import OpenAICompatRuntime
from forecourt.adapters.models.triton_versions import VersionRoute, VersionRouter, triton_errors
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.errors import InvalidParams, UpstreamError

if TYPE_CHECKING:
    from forecourt.gateway.pipeline import Gateway

logger = logging.getLogger(__name__)

RUNTIME = "nvidia"
METADATA_TTL_S = 300.0
DEFAULT_MAX_TOKENS = 256


def _prompt(request: ModelRequest) -> str:
    turns = [request.system_text] if request.system_text else []
    turns.extend(m.content for m in request.prompt_messages)
    return "\n\n".join(turns)


def _tensor(spec: Mapping[str, Any]) -> Any:
    import numpy as np
    from tritonclient.http import InferInput  # type: ignore[import-untyped]
    from tritonclient.utils import triton_to_np_dtype  # type: ignore[import-untyped]

    shape = [int(d) for d in spec["shape"]]
    if any(d < 0 for d in shape):
        raise InvalidParams("Input shapes must be concrete.", details={"input": str(spec["name"])[:200]})
    dtype = triton_to_np_dtype(spec["datatype"])
    try:
        array = np.array(spec["data"], dtype=dtype).reshape(shape)
    except (ValueError, TypeError) as exc:
        raise InvalidParams(
            "Input data does not match its datatype and shape.",
            details={"input": str(spec["name"])[:200], "expected_elements": math.prod(shape)},
        ) from exc
    tensor = InferInput(spec["name"], shape, spec["datatype"])
    tensor.set_data_from_numpy(array, binary_data=False)
    return tensor


class TritonBackend:
    """KServe v2 inference against one or more Triton servers; clients reused per event loop and URL."""

    def __init__(self) -> None:
        self._clients: LoopLocal[Any] = LoopLocal(lambda c: c.close())
        # By the server's URL, the model and its version: the same answer whichever loop's client asks.
        self._outputs: caching.Cache[tuple[str, str, str], tuple[str, ...]] = caching.lru(
            "adapters.nvidia.output_names", 1024, max_age_s=METADATA_TTL_S
        )

    def client(self, url: str, timeout_s: float, *, pin: bool | None = None) -> Any:
        """The ``tritonclient.http.aio`` client for ``url`` (``http(s)://host:port[/prefix]``).

        ``pin`` (a company's URL: whether private targets are allowed) makes every connection resolve the host once
        and go only to the checked address; ``None`` (the operator's own Triton) is trusted.
        """
        parts = urlsplit(url)
        target, ssl = parts.netloc + parts.path.rstrip("/"), parts.scheme == "https"

        def build() -> Any:
            if pin is not None:
                from forecourt.adapters.models.triton_pinned import PinnedTritonClient

                return PinnedTritonClient(target, conn_timeout=timeout_s, ssl=ssl, allow_private=pin)
            import tritonclient.http.aio as triton_aio  # type: ignore[import-untyped]

            return triton_aio.InferenceServerClient(url=target, ssl=ssl, conn_timeout=timeout_s)

        return self._clients.get(f"{url}|{timeout_s}|{pin}", build)

    async def output_names(
        self, client: Any, url: str, model: str, version: str, headers: Mapping[str, str]
    ) -> list[str]:
        """The output tensor names of ``model`` on the server at ``url`` (``client``'s), from its metadata.

        Kept for a few minutes by URL, model and version (not by the client, which is one per event loop).
        """
        key = (url, model, version)
        hit = self._outputs.get(key)
        if hit is not None:
            return list(hit)
        with triton_errors():
            meta = await client.get_model_metadata(model, model_version=version, headers=dict(headers))
        names = [str(o["name"]) for o in meta.get("outputs", [])]
        self._outputs.put(key, tuple(names))
        return names

    async def infer(
        self,
        client: Any,
        model: str,
        version: str,
        inputs: list[Any],
        outputs: list[str],
        headers: Mapping[str, str],
    ) -> dict[str, Any]:
        """One inference request; the response document with JSON tensors."""
        from tritonclient.http import InferRequestedOutput

        requested = [InferRequestedOutput(name, binary_data=False) for name in outputs]
        with triton_errors():
            result = await client.infer(
                model, inputs, model_version=version, outputs=requested or None, headers=dict(headers)
            )
        response: dict[str, Any] = result.get_response()
        return response

    async def aclose(self) -> None:
        """Close the clients of the running loop."""
        await self._clients.aclose()


class NvidiaAdapter:
    """Runs ``nvidia.runInference`` (and ``model.invoke`` calls routed to NVIDIA)."""

    id = RUNTIME

    def __init__(
        self, defaults: Mapping[str, Any] | None = None, gateway: Callable[[], Gateway | None] | None = None
    ) -> None:
        """Create the adapter.

        Args:
            defaults: The operator's configuration of this adapter (its endpoints are trusted; a company's
                different ones only with ``allow_company_endpoints``).
            gateway: Returns the gateway whose company policies set GPU quotas (none: configuration only).
        """
        self.defaults = dict(defaults or {})
        self.triton = TritonBackend()
        self.nim = OpenAICompatRuntime(RUNTIME)
        self.pinned: dict[str, bool] = {}
        """Company endpoints (URL → whether private targets are allowed) whose connections are checked when made."""
        self.versions = VersionRouter()
        self.admin = NvidiaAdmin(self)
        self.quota = GpuQuota(self.defaults, gateway or (lambda: None))
        self.customizer = CustomizerJobs(self)
        self.fine_tune = JobActions("nvidia.fineTune", self.customizer, JobSlots(self))

    def _backend(self, payload: Mapping[str, Any], config: Mapping[str, Any]) -> str:
        if payload.get("backend"):
            return str(payload["backend"])
        if payload.get("inputs"):
            return "triton"
        return str(config.get("backend") or "triton")

    async def endpoint(self, context: ExecutionContext, section: str, key: str) -> str:
        config = context.adapter_config.get(section) or {}
        operator = self.defaults.get(section) or {}
        operator_url = operator.get(key) if isinstance(operator, Mapping) else None
        url = await checked_endpoint(
            config.get(key) if isinstance(config, Mapping) else None,
            operator_url=operator_url,
            allow_company=self.defaults.get("allow_company_endpoints") is True,
            settings=context.settings,
            runtime=RUNTIME,
        )
        if url != operator_url:  # a company's endpoint: its HTTP clients connect only to checked addresses
            self.pinned[url] = context.settings.allow_private_targets
            if section == "nim":
                self.nim.pin(url, allow_private=context.settings.allow_private_targets)
        return url

    def timeout(self, context: ExecutionContext) -> float:
        return float(context.adapter_config.get("timeout_s", context.action.timeout_s))

    async def triton_client(self, context: ExecutionContext) -> tuple[str, Any, dict[str, str]]:
        """The Triton endpoint of this call, its client, and the call's credential headers."""
        url = await self.endpoint(context, "triton", "url")
        client = self.triton.client(url, self.timeout(context), pin=self.pinned.get(url))
        return url, client, auth_headers(context.credential)

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the action: an inference on the chosen backend, or a versioning or fine-tuning action."""
        if context.action.name in ADMIN_ACTIONS:
            return await self.admin.execute(payload, context)
        if self.fine_tune.handles(context.action.name):
            return await self.fine_tune.execute(payload, context)
        return await self.infer(payload, context)

    async def infer(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run one inference on the chosen backend."""
        backend = self._backend(payload, context.adapter_config)
        if backend == "nim":
            if payload.get("inputs"):
                raise InvalidParams("Raw tensors need backend triton.")
            request = parse_request(payload, context.adapter_config)
            base_url = await self.endpoint(context, "nim", "base_url")
            result = await self.nim.run(
                request, base_url=base_url, headers=auth_headers(context.credential), timeout_s=self.timeout(context)
            )
            result.metadata["backend"] = "nim"
            return result
        async with self.quota.inference_slot(context, self.timeout(context)):
            return await self._triton(payload, context)

    def _triton_model(self, payload: Mapping[str, Any], section: Mapping[str, Any]) -> str:
        model = payload.get("model") or section.get("default_model")
        if not isinstance(model, str) or not model:
            raise InvalidParams("A Triton model name is required.")
        allowed = section.get("models") or []
        if allowed and model not in allowed:
            raise InvalidParams("This Triton model is not offered here.", details={"model": model[:200]})
        return model

    async def _triton(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        raw_section = context.adapter_config.get("triton") or {}
        section: Mapping[str, Any] = raw_section if isinstance(raw_section, Mapping) else {}
        model = self._triton_model(payload, section)
        url, client, headers = await self.triton_client(context)
        route = await self._route_version(client, url, payload, section, model, headers)
        version = route.version
        if payload.get("inputs"):
            inputs = [_tensor(spec) for spec in payload["inputs"]]
            names = list(payload.get("outputs") or []) or await self.triton.output_names(
                client, url, model, version, headers
            )
            response = await self.triton.infer(client, model, version, inputs, names, headers)
            output = {
                "model_name": response.get("model_name", model),
                "model_version": response.get("model_version", version),
                "outputs": response.get("outputs", []),
            }
            metadata = {
                "model": model,
                "tokens": None,
                "runtime": RUNTIME,
                "backend": "triton",
                "model_version": str(output["model_version"]),
                "version_route": route.reason,
            }
            return AdapterResult(output=output, result_type=INFERENCE_RESULT, metadata=metadata)
        result = await self._triton_text(payload, context, client, model, version, section, headers)
        result.metadata["version_route"] = route.reason
        return result

    async def _route_version(
        self,
        client: Any,
        url: str,
        payload: Mapping[str, Any],
        section: Mapping[str, Any],
        model: str,
        headers: Mapping[str, str],
    ) -> VersionRoute:
        """The payload's version, the company's pin, or the latest ready one (``version_routing: server``: none)."""
        explicit = VersionRouter.explicit(payload, section, model)
        if explicit is not None:
            return explicit
        if section.get("version_routing") == "server":
            return VersionRoute("", "server")
        ready = self.versions.cached(url)
        known = True
        if ready is None or model not in ready:
            with triton_errors():
                entries = await client.get_model_repository_index(headers=dict(headers))
            ready = self.versions.remember(url, entries)
            known = any(e.get("name") == model for e in entries)
        return VersionRouter.latest(ready, model, known)

    async def _triton_text(
        self,
        payload: Mapping[str, Any],
        context: ExecutionContext,
        client: Any,
        model: str,
        version: str,
        section: Mapping[str, Any],
        headers: Mapping[str, str],
    ) -> AdapterResult:
        request = parse_request({**payload, "model": model}, context.adapter_config)
        if request.kind != "text":
            raise InvalidParams("Embeddings on NVIDIA run with backend nim.")
        text_in = str(section.get("text_input") or "text_input")
        text_out = str(section.get("text_output") or "text_output")
        max_name = str(section.get("max_tokens_input") or "max_tokens")
        max_tokens = int(
            request.params.get("maxOutputTokens") or section.get("default_max_tokens") or DEFAULT_MAX_TOKENS
        )
        inputs = [
            _tensor({"name": text_in, "datatype": "BYTES", "shape": [1, 1], "data": [[_prompt(request)]]}),
            _tensor({"name": max_name, "datatype": "INT32", "shape": [1, 1], "data": [[max_tokens]]}),
        ]
        response = await self.triton.infer(client, model, version, inputs, [text_out], headers)
        texts = [o.get("data") or [] for o in response.get("outputs", []) if o.get("name") == text_out]
        flat = texts[0] if texts else []
        text = "".join(str(t) for t in flat)
        return text_result(
            RUNTIME,
            request,
            text,
            model_version=response.get("model_version"),
            extra={"backend": "triton", "stream": False},
        )

    async def stream(self, payload: Mapping[str, Any], context: ExecutionContext) -> AsyncIterator[ModelChunk]:
        """Pieces of a NIM completion as they arrive; Triton (no HTTP streaming) answers in one piece."""
        if self._backend(payload, context.adapter_config) != "nim":
            result = await self.execute(payload, context)
            if not isinstance(result.output, str):
                raise InvalidParams("Only text completions stream.")
            yield ModelChunk(text=result.output, total_tokens=result.metadata.get("tokens"))
            return
        request = parse_request(payload, context.adapter_config)
        base_url = await self.endpoint(context, "nim", "base_url")
        async for chunk in self.nim.stream(
            request, base_url=base_url, headers=auth_headers(context.credential), timeout_s=self.timeout(context)
        ):
            yield chunk

    async def ready(self, context: ExecutionContext) -> bool:
        """Whether the configured Triton server reports ready (``GET /v2/health/ready``)."""
        _url, client, headers = await self.triton_client(context)
        try:
            with triton_errors():
                return bool(await client.is_server_ready(headers=headers))
        except UpstreamError:
            return False

    async def aclose(self) -> None:
        """Close the clients of the running loop."""
        await self.triton.aclose()
        await self.nim.aclose()
        await self.customizer.aclose()
        await self.quota.aclose()
