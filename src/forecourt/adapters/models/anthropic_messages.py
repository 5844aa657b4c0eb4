"""Anthropic's Messages API (``POST /v1/messages``) through the ``anthropic`` SDK: ``anthropic.invokeModel``, and
``model.invoke`` when routed here.

The request is the Messages shape: ``{model, max_tokens, system?, messages: [{role, content}], temperature?,
top_p?, top_k?, stop_sequences?, stream?}``; the answer's text blocks are joined, ``usage.input_tokens`` /
``usage.output_tokens`` become the result's token counts. With ``stream: true`` the server-sent events
(``message_start`` with the input tokens, ``content_block_delta`` ``text_delta`` pieces, ``message_delta`` with the
stop reason and output tokens, ``message_stop``) are consumed as they arrive.

As with the OpenAI-compatible runtime, the SDK's own retries are off (``max_retries=0``) and the key comes from the
gateway's credential broker per call (``extra_headers``: ``Authorization: Bearer``, which this SDK sends for an API
key, or ``x-api-key``): the client is built with an explicit placeholder key, so the SDK never reads
``ANTHROPIC_API_KEY``, a profile or federation settings of the process, and the placeholder is never sent.
Anthropic serves no embeddings: ``kind: embedding`` is refused before any request.
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
    parse_request,
    parse_retry_after,
    text_result,
    upstream_error,
)
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.errors import InvalidParams, Timeout
from forecourt.outbound_urls import guarded_transport2

if TYPE_CHECKING:  # the SDK is imported on first use
    from anthropic import AsyncAnthropic

logger = logging.getLogger(__name__)

RUNTIME = "anthropic"
PLACEHOLDER_KEY = "forecourt-no-key"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 1024


@contextlib.contextmanager
def provider_errors() -> Iterator[None]:
    """Turn the SDK's exceptions into gateway errors (never carrying Anthropic's message)."""
    import anthropic

    try:
        yield
    except anthropic.APITimeoutError as exc:
        logger.warning("runtime %s timed out", RUNTIME)
        raise Timeout(details={"runtime": RUNTIME}) from exc
    except anthropic.APIStatusError as exc:
        logger.warning("runtime %s answered HTTP %d", RUNTIME, exc.status_code)
        retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
        raise upstream_error(RUNTIME, exc.status_code, retry_after=retry_after) from exc
    except anthropic.APIConnectionError as exc:
        logger.warning("runtime %s unreachable: %s", RUNTIME, type(exc.__cause__ or exc).__name__)
        raise upstream_error(RUNTIME, None) from exc
    except anthropic.APIError as exc:  # a malformed answer, or an `error` event inside a stream
        logger.warning("runtime %s answered something unreadable: %s", RUNTIME, type(exc).__name__)
        raise upstream_error(RUNTIME, 502) from exc


def message_args(request: ModelRequest, config: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API body of ``request`` (without ``stream``)."""
    p = request.params
    default_max = config.get("max_tokens")
    max_tokens = p.get("maxOutputTokens") or (default_max if isinstance(default_max, int) else DEFAULT_MAX_TOKENS)
    args: dict[str, Any] = {
        "model": request.model,
        "max_tokens": int(max_tokens),
        "messages": [{"role": m.role, "content": m.content} for m in request.prompt_messages],
    }
    if request.system_text:
        args["system"] = request.system_text
    sampling = {
        dst: p[src] for src, dst in (("temperature", "temperature"), ("topP", "top_p"), ("topK", "top_k")) if src in p
    }
    if sampling:  # body fields the SDK no longer names: sent as they are
        args["extra_body"] = sampling
    if p.get("stop"):
        args["stop_sequences"] = list(p["stop"])
    return args


class AnthropicAdapter:
    """``anthropic.invokeModel``: Claude models through the Messages API."""

    id = RUNTIME

    def __init__(self, defaults: Mapping[str, Any] | None = None) -> None:
        """Create the adapter.

        Args:
            defaults: The operator's configuration (its ``base_url`` is trusted; a company's different one only
                with ``allow_company_endpoints``).
        """
        self.defaults = dict(defaults or {})
        self._clients: LoopLocal[AsyncAnthropic] = LoopLocal(lambda c: c.close())
        self._pinned: dict[str, bool] = {}

    def check_configured(self, config: Mapping[str, Any]) -> None:
        """Refuse a call before its credential is issued when the endpoint is blank."""
        if "base_url" in config and not config.get("base_url"):
            raise RuntimeNotConfigured(details={"runtime": RUNTIME})

    def client(self, base_url: str, timeout_s: float) -> AsyncAnthropic:
        """The SDK client for ``base_url`` on the running loop."""
        from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

        def build() -> AsyncAnthropic:
            extra: dict[str, Any] = {}
            if base_url in self._pinned:
                transport = guarded_transport2(allow_private=self._pinned[base_url])
                extra["http_client"] = DefaultAsyncHttpxClient(transport=transport, follow_redirects=False)
            return AsyncAnthropic(api_key=PLACEHOLDER_KEY, base_url=base_url, timeout=timeout_s, max_retries=0, **extra)

        return self._clients.get(f"{base_url}|{timeout_s}", build)

    async def _target(self, context: ExecutionContext) -> tuple[AsyncAnthropic, dict[str, Any]]:
        config = context.adapter_config
        operator_url = self.defaults.get("base_url") or DEFAULT_BASE_URL
        base_url = await checked_endpoint(
            config.get("base_url") or operator_url,
            operator_url=operator_url,
            allow_company=self.defaults.get("allow_company_endpoints") is True,
            settings=context.settings,
            runtime=RUNTIME,
        )
        if base_url != operator_url:
            self._pinned[base_url] = context.settings.allow_private_targets
        timeout_s = float(config.get("timeout_s", context.action.timeout_s))
        headers: dict[str, Any] = auth_headers(context.credential)
        if not any(name.lower() == "authorization" for name in headers):
            from anthropic import omit

            headers["Authorization"] = omit  # a key in x-api-key: no placeholder bearer beside it
        return self.client(base_url, timeout_s), headers

    def _request(self, payload: Mapping[str, Any], context: ExecutionContext) -> ModelRequest:
        request = parse_request(payload, context.adapter_config)
        if request.kind != "text":
            raise InvalidParams("Anthropic serves text completions only.", details={"runtime": RUNTIME})
        return request

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run one call (streamed and assembled when ``stream: true``)."""
        request = self._request(payload, context)
        if request.stream:
            return await assemble(RUNTIME, request, self.stream(payload, context))
        client, headers = await self._target(context)
        with provider_errors():
            message = await client.messages.create(
                **message_args(request, context.adapter_config), extra_headers=headers
            )
        text = "".join(block.text for block in message.content if getattr(block, "type", None) == "text")
        return text_result(
            RUNTIME,
            request,
            text,
            input_tokens=message.usage.input_tokens,
            output_tokens=message.usage.output_tokens,
            finish_reason=message.stop_reason,
            model_version=message.model,
        )

    async def stream(self, payload: Mapping[str, Any], context: ExecutionContext) -> AsyncIterator[ModelChunk]:
        """The completion's pieces as Anthropic streams them."""
        request = self._request(payload, context)
        client, headers = await self._target(context)
        with provider_errors():
            events = await client.messages.create(
                **message_args(request, context.adapter_config), stream=True, extra_headers=headers
            )
            async with events:
                async for event in events:
                    chunk = _chunk(event)
                    if chunk is not None:
                        yield chunk

    async def aclose(self) -> None:
        """Close the SDK clients of the running loop."""
        await self._clients.aclose()


def _chunk(event: Any) -> ModelChunk | None:
    kind = getattr(event, "type", None)
    if kind == "message_start":
        usage = event.message.usage
        return ModelChunk(
            text="", input_tokens=usage.input_tokens, output_tokens=None, model_version=event.message.model
        )
    if kind == "content_block_delta" and getattr(event.delta, "type", None) == "text_delta":
        return ModelChunk(text=event.delta.text)
    if kind == "message_delta":
        return ModelChunk(text="", finish_reason=event.delta.stop_reason, output_tokens=event.usage.output_tokens)
    return None
