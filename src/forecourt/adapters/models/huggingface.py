"""Hugging Face Inference Endpoints and Text Generation Inference (TGI) through ``huggingface_hub``'s
``AsyncInferenceClient``: ``huggingface.invokeModel``, and ``model.invoke`` when routed here.

An Inference Endpoint (or a self-hosted TGI / Text Embeddings Inference server) serves one model at one URL, so
the configuration maps each model to its endpoint (``endpoints: {model: url}``), with ``base_url`` for a model not
listed. Text calls go to TGI's Messages API (``POST {url}/v1/chat/completions``, OpenAI's shape, server-sent
``chat.completion.chunk`` events when streamed, with a usage chunk at the end); embeddings to the endpoint's root
(``POST {url}`` ``{"inputs": [...]}`` → one vector per input, the Text Embeddings Inference and Inference Endpoints
feature-extraction shape).

The client is built per call with the call's credential headers (an Inference Endpoint wants
``Authorization: Bearer hf_...``) and an explicit placeholder token, so the library never reads ``HF_TOKEN`` or a
stored login of the process. Its HTTP connections come from one pool per event loop and endpoint kept here (a
company's endpoint: one that connects only to addresses checked when each connection is made).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from forecourt.adapters.errors import RuntimeNotConfigured
from forecourt.adapters.models.common import (
    LoopLocal,
    ModelChunk,
    ModelRequest,
    assemble,
    auth_headers,
    checked_endpoint,
    embedding_result,
    parse_request,
    parse_retry_after,
    text_result,
    upstream_error,
)
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.errors import Timeout
from forecourt.outbound_urls import guarded_transport2

if TYPE_CHECKING:  # the library is imported on first use
    import httpx2
    from huggingface_hub import AsyncInferenceClient

logger = logging.getLogger(__name__)

RUNTIME = "huggingface"
PLACEHOLDER_KEY = "forecourt-no-key"


@contextlib.contextmanager
def provider_errors() -> Iterator[None]:
    """Turn the library's exceptions into gateway errors (never carrying the endpoint's message)."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, InferenceTimeoutError

    try:
        yield
    except InferenceTimeoutError as exc:
        logger.warning("runtime %s timed out", RUNTIME)
        raise Timeout(details={"runtime": RUNTIME}) from exc
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        logger.warning("runtime %s answered HTTP %s", RUNTIME, status)
        retry_after = parse_retry_after(exc.response.headers.get("retry-after")) if exc.response is not None else None
        raise upstream_error(RUNTIME, status, retry_after=retry_after) from exc
    except httpx2.TimeoutException as exc:  # a stream that stalls after its headers
        logger.warning("runtime %s timed out", RUNTIME)
        raise Timeout(details={"runtime": RUNTIME}) from exc
    except httpx2.TransportError as exc:
        logger.warning("runtime %s unreachable: %s", RUNTIME, type(exc).__name__)
        raise upstream_error(RUNTIME, None) from exc
    except (ValueError, KeyError, TypeError) as exc:  # an answer that is not the documented shape
        logger.warning("runtime %s answered something unreadable: %s", RUNTIME, type(exc).__name__)
        raise upstream_error(RUNTIME, 502) from exc


def endpoint_for(config: Mapping[str, Any], model: str) -> Any:
    """The URL that serves ``model``: its entry in ``endpoints``, else ``base_url``."""
    endpoints = config.get("endpoints")
    if isinstance(endpoints, Mapping) and isinstance(endpoints.get(model), str):
        return endpoints[model]
    return config.get("base_url")


def _chat_args(request: ModelRequest) -> dict[str, Any]:
    p = request.params
    messages: list[dict[str, Any]] = []
    if request.system_text:
        messages.append({"role": "system", "content": request.system_text})
    messages.extend({"role": m.role, "content": m.content} for m in request.prompt_messages)
    args: dict[str, Any] = {"model": request.model, "messages": messages}
    for src, dst in (("temperature", "temperature"), ("maxOutputTokens", "max_tokens"), ("topP", "top_p")):
        if src in p:
            args[dst] = p[src]
    if p.get("stop"):
        args["stop"] = list(p["stop"])
    if "seed" in p:
        args["seed"] = p["seed"]
    if "topK" in p:
        args["extra_body"] = {"top_k": p["topK"]}
    return args


class HuggingFaceAdapter:
    """``huggingface.invokeModel``: chat completions and embeddings on Inference Endpoints or TGI / TEI servers."""

    id = RUNTIME

    def __init__(self, defaults: Mapping[str, Any] | None = None) -> None:
        """Create the adapter.

        Args:
            defaults: The operator's configuration (its endpoints are trusted; a company's different one only with
                ``allow_company_endpoints``).
        """
        self.defaults = dict(defaults or {})
        self._pools: LoopLocal[httpx2.AsyncClient] = LoopLocal(lambda c: c.aclose())

    def check_configured(self, config: Mapping[str, Any]) -> None:
        """Refuse a call before its credential is issued when no endpoint is configured at all."""
        endpoints = config.get("endpoints")
        if not config.get("base_url") and not (isinstance(endpoints, Mapping) and endpoints):
            raise RuntimeNotConfigured(details={"runtime": RUNTIME})

    def _pool(self, url: str, pin: bool | None) -> httpx2.AsyncClient:
        import httpx2

        def build() -> httpx2.AsyncClient:
            transport = guarded_transport2(allow_private=pin) if pin is not None else None
            return httpx2.AsyncClient(follow_redirects=False, transport=transport)

        return self._pools.get(f"{url}|{pin}", build)

    async def _client(self, request: ModelRequest, context: ExecutionContext) -> AsyncInferenceClient:
        from huggingface_hub import AsyncInferenceClient

        config = context.adapter_config
        operator_url = endpoint_for(self.defaults, request.model)
        url = await checked_endpoint(
            endpoint_for(config, request.model),
            operator_url=operator_url,
            allow_company=self.defaults.get("allow_company_endpoints") is True,
            settings=context.settings,
            runtime=RUNTIME,
        )
        pin = None if url == operator_url else context.settings.allow_private_targets
        client = AsyncInferenceClient(
            base_url=url,
            token=PLACEHOLDER_KEY,
            headers=auth_headers(context.credential),
            timeout=float(config.get("timeout_s", context.action.timeout_s)),
        )
        # The library opens (and closes) a fresh connection pool per client; this runtime's pool is shared.
        client._async_client = self._pool(url, pin)
        return client

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run one call: embeddings, or a completion (streamed and assembled when ``stream: true``)."""
        request = parse_request(payload, context.adapter_config)
        if request.kind == "embedding":
            return await self._embed(request, context)
        if request.stream:
            return await assemble(RUNTIME, request, self._stream(request, context))
        client = await self._client(request, context)
        async with client:
            with provider_errors():
                response = await client.chat_completion(**_chat_args(request))
        choice = response.choices[0] if response.choices else None
        usage = response.usage
        return text_result(
            RUNTIME,
            request,
            (choice.message.content or "") if choice else "",
            input_tokens=usage.prompt_tokens if usage else None,
            output_tokens=usage.completion_tokens if usage else None,
            total_tokens=usage.total_tokens if usage else None,
            finish_reason=choice.finish_reason if choice else None,
            model_version=response.model,
        )

    async def _embed(self, request: ModelRequest, context: ExecutionContext) -> AdapterResult:
        client = await self._client(request, context)
        extra: dict[str, Any] = {}
        if "dimensions" in request.params:
            extra["dimensions"] = request.params["dimensions"]
        async with client:
            with provider_errors():
                array = await client.feature_extraction(list(request.texts), **extra)
        vectors = [[float(x) for x in row] for row in array.tolist()]
        if len(vectors) != len(request.texts):
            logger.warning("runtime %s answered %d vectors for %d inputs", RUNTIME, len(vectors), len(request.texts))
            raise upstream_error(RUNTIME, 502)
        return embedding_result(RUNTIME, request, vectors)

    async def stream(self, payload: Mapping[str, Any], context: ExecutionContext) -> AsyncIterator[ModelChunk]:
        """The completion's pieces as the endpoint streams them."""
        request = parse_request(payload, context.adapter_config)
        async for chunk in self._stream(request, context):
            yield chunk

    async def _stream(self, request: ModelRequest, context: ExecutionContext) -> AsyncIterator[ModelChunk]:
        client = await self._client(request, context)
        async with client:  # closes the streamed response, not the shared pool
            with provider_errors():
                from huggingface_hub import ChatCompletionInputStreamOptions

                usage_at_end = ChatCompletionInputStreamOptions(include_usage=True)
                events = await client.chat_completion(**_chat_args(request), stream=True, stream_options=usage_at_end)
                async for event in events:
                    usage = event.usage
                    choice = event.choices[0] if event.choices else None
                    text = (choice.delta.content or "") if choice and choice.delta else ""
                    yield ModelChunk(
                        text=text,
                        finish_reason=choice.finish_reason if choice else None,
                        input_tokens=usage.prompt_tokens if usage else None,
                        output_tokens=usage.completion_tokens if usage else None,
                        total_tokens=usage.total_tokens if usage else None,
                        model_version=event.model,
                    )

    async def aclose(self) -> None:
        """Close the connection pools of the running loop."""
        await self._pools.aclose()
