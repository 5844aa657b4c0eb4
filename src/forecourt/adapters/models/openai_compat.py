"""Any OpenAI-compatible runtime (vLLM, Ollama, LM Studio, OpenAI; NVIDIA NIM too) through the ``openai`` SDK.

The SDK's own retries are off (``max_retries=0``): whether to retry is the caller's decision, told by the
error's ``retryable``, and a hidden retry would spend the gateway's deadline twice. API keys come from the
gateway's credential broker per call (``extra_headers``), never from the SDK's environment variables.
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
from forecourt.errors import InvalidParams, Timeout
from forecourt.outbound_urls import guarded_transport2

if TYPE_CHECKING:  # the SDK is imported on first use: ~0.6 s and tens of MB in every process otherwise
    import openai
    from openai import AsyncOpenAI

logger = logging.getLogger(__name__)

PLACEHOLDER_KEY = "forecourt-no-key"
"""Sent as the SDK's api_key when the runtime needs none; a configured credential's headers replace it."""


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    millis = headers.get("retry-after-ms")
    if millis:
        with contextlib.suppress(ValueError):
            return max(float(millis) / 1000.0, 0.0)
    return parse_retry_after(headers.get("retry-after"))


@contextlib.contextmanager
def provider_errors(runtime: str) -> Iterator[None]:
    """Turn the SDK's exceptions into gateway errors (never carrying the provider's message)."""
    import openai

    try:
        yield
    except openai.APITimeoutError as exc:
        logger.warning("runtime %s timed out", runtime)
        raise Timeout(details={"runtime": runtime}) from exc
    except openai.APIStatusError as exc:
        logger.warning("runtime %s answered HTTP %d", runtime, exc.status_code)
        raise upstream_error(runtime, exc.status_code, retry_after=_retry_after(exc)) from exc
    except openai.APIConnectionError as exc:
        logger.warning("runtime %s unreachable: %s", runtime, type(exc.__cause__ or exc).__name__)
        raise upstream_error(runtime, None) from exc
    except openai.APIError as exc:  # a malformed answer (e.g. a broken stream)
        logger.warning("runtime %s answered something unreadable: %s", runtime, type(exc).__name__)
        raise upstream_error(runtime, 502) from exc


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    system = request.system_text
    if system:
        out.append({"role": "system", "content": system})
    out.extend({"role": m.role, "content": m.content} for m in request.prompt_messages)
    return out


def _chat_args(request: ModelRequest) -> dict[str, Any]:
    p = request.params
    args: dict[str, Any] = {"model": request.model, "messages": _messages(request)}
    for src, dst in (("temperature", "temperature"), ("maxOutputTokens", "max_tokens"), ("topP", "top_p")):
        if src in p:
            args[dst] = p[src]
    if p.get("stop"):
        args["stop"] = list(p["stop"])
    if "seed" in p:
        args["seed"] = p["seed"]
    if "topK" in p:
        args["extra_body"] = {"top_k": p["topK"]}  # vLLM and Ollama accept it; OpenAI ignores unknown fields
    return args


class OpenAICompatRuntime:
    """Calls one kind of OpenAI-compatible endpoint; clients are reused per event loop and base URL."""

    def __init__(self, runtime: str) -> None:
        """Create the runtime.

        Args:
            runtime: The name errors and metadata carry (``openai``, ``nvidia``).
        """
        self.runtime = runtime
        self._clients: LoopLocal[AsyncOpenAI] = LoopLocal(lambda c: c.close())
        self._pinned: dict[str, bool] = {}

    def pin(self, base_url: str, *, allow_private: bool) -> None:
        """Connect to ``base_url`` (a company's endpoint) only at addresses checked when each connection is made.

        The operator's own endpoints are trusted and never pinned; a company's passed the SSRF guard when saved and
        before the call, and its client resolves the name once per connection and connects to the checked address.
        """
        self._pinned[base_url] = allow_private

    def client(self, base_url: str, timeout_s: float) -> AsyncOpenAI:
        """The SDK client for ``base_url``."""
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        def build() -> AsyncOpenAI:
            extra: dict[str, Any] = {}
            if base_url in self._pinned:
                transport = guarded_transport2(allow_private=self._pinned[base_url])
                extra["http_client"] = DefaultAsyncHttpxClient(transport=transport, follow_redirects=False)
            return AsyncOpenAI(api_key=PLACEHOLDER_KEY, base_url=base_url, timeout=timeout_s, max_retries=0, **extra)

        return self._clients.get(f"{base_url}|{timeout_s}", build)

    async def complete(
        self, request: ModelRequest, *, base_url: str, headers: Mapping[str, str], timeout_s: float
    ) -> AdapterResult:
        """One chat completion (streamed and assembled when ``request.stream``)."""
        if request.stream:
            return await assemble(
                self.runtime, request, self.stream(request, base_url=base_url, headers=headers, timeout_s=timeout_s)
            )
        client = self.client(base_url, timeout_s)
        with provider_errors(self.runtime):
            response = await client.chat.completions.create(**_chat_args(request), extra_headers=dict(headers))
        choice = response.choices[0] if response.choices else None
        usage = response.usage
        return text_result(
            self.runtime,
            request,
            (choice.message.content or "") if choice else "",
            input_tokens=usage.prompt_tokens if usage else None,
            output_tokens=usage.completion_tokens if usage else None,
            total_tokens=usage.total_tokens if usage else None,
            finish_reason=choice.finish_reason if choice else None,
            model_version=response.model,
        )

    async def stream(
        self, request: ModelRequest, *, base_url: str, headers: Mapping[str, str], timeout_s: float
    ) -> AsyncIterator[ModelChunk]:
        """The completion as it arrives (server-sent ``chat.completion.chunk`` events)."""
        client = self.client(base_url, timeout_s)
        with provider_errors(self.runtime):
            events = await client.chat.completions.create(
                **_chat_args(request),
                stream=True,
                stream_options={"include_usage": True},
                extra_headers=dict(headers),
            )
            async with events:
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

    async def embed(
        self, request: ModelRequest, *, base_url: str, headers: Mapping[str, str], timeout_s: float
    ) -> AdapterResult:
        """Embeddings of ``request.texts``, in input order."""
        client = self.client(base_url, timeout_s)
        extra: dict[str, Any] = {}
        if "dimensions" in request.params:
            extra["dimensions"] = request.params["dimensions"]
        with provider_errors(self.runtime):
            response = await client.embeddings.create(
                model=request.model,
                input=list(request.texts),
                encoding_format="float",
                extra_headers=dict(headers),
                **extra,
            )
        vectors = [list(item.embedding) for item in sorted(response.data, key=lambda d: d.index)]
        tokens = response.usage.total_tokens if response.usage else None
        return embedding_result(self.runtime, request, vectors, tokens=tokens)

    async def run(
        self, request: ModelRequest, *, base_url: str, headers: Mapping[str, str], timeout_s: float
    ) -> AdapterResult:
        """Embeddings or a completion, by ``request.kind``."""
        if request.kind == "embedding":
            return await self.embed(request, base_url=base_url, headers=headers, timeout_s=timeout_s)
        return await self.complete(request, base_url=base_url, headers=headers, timeout_s=timeout_s)

    async def aclose(self) -> None:
        """Close the clients of the running loop."""
        await self._clients.aclose()


class OpenAICompatAdapter:
    """``openai.invokeModel``: chat completions and embeddings on the configured OpenAI-compatible server."""

    id = "openai"

    def __init__(self, defaults: Mapping[str, Any] | None = None) -> None:
        """Create the adapter.

        Args:
            defaults: The operator's configuration of this adapter (its ``base_url`` is trusted; a company's
                different one only with ``allow_company_endpoints``).
        """
        self.defaults = dict(defaults or {})
        self.runtime = OpenAICompatRuntime(self.id)

    def check_configured(self, config: Mapping[str, Any]) -> None:
        """Refuse a call before its credential is issued when no endpoint is configured."""
        if not isinstance(config.get("base_url"), str) or not config.get("base_url"):
            raise RuntimeNotConfigured(details={"runtime": self.id})

    async def _target(self, context: ExecutionContext) -> tuple[str, dict[str, str], float]:
        config = context.adapter_config
        base_url = await checked_endpoint(
            config.get("base_url"),
            operator_url=self.defaults.get("base_url"),
            allow_company=self.defaults.get("allow_company_endpoints") is True,
            settings=context.settings,
            runtime=self.id,
        )
        if base_url != self.defaults.get("base_url"):
            self.runtime.pin(base_url, allow_private=context.settings.allow_private_targets)
        return base_url, auth_headers(context.credential), float(config.get("timeout_s", context.action.timeout_s))

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run one call."""
        request = parse_request(payload, context.adapter_config)
        base_url, headers, timeout_s = await self._target(context)
        return await self.runtime.run(request, base_url=base_url, headers=headers, timeout_s=timeout_s)

    async def stream(self, payload: Mapping[str, Any], context: ExecutionContext) -> AsyncIterator[ModelChunk]:
        """The completion's pieces as the server streams them."""
        request = parse_request(payload, context.adapter_config)
        if request.kind != "text":
            raise InvalidParams("Only text completions stream.")
        base_url, headers, timeout_s = await self._target(context)
        async for chunk in self.runtime.stream(request, base_url=base_url, headers=headers, timeout_s=timeout_s):
            yield chunk

    async def aclose(self) -> None:
        """Close the SDK clients of the running loop."""
        await self.runtime.aclose()
