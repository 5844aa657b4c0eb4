"""``vertex.invokeModel``: Gemini and other publisher models on Vertex AI through the ``google-genai`` SDK.

The SDK runs in Vertex mode (``Client(vertexai=True, project, location)``), so it calls
``POST https://{location}-aiplatform.googleapis.com/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:
generateContent`` (and ``:streamGenerateContent?alt=sse`` when streaming). Its credential is the short-lived
Google access token the gateway's broker minted for this call (service account or workload identity, seed 001
§5), wrapped as ``google.oauth2.credentials.Credentials(token)`` without an expiry: the broker already refreshes
tokens before they expire, and the SDK must never try to refresh one itself.

Building an SDK client costs far more than a call's overhead should (hundreds of milliseconds: TLS contexts, HTTP
clients), so one client per event loop and endpoint serves every call; the per-call token reaches it through a
context variable (:class:`~.vertex_token.CallToken`), which keeps concurrent calls of different companies apart.
The SDK's implicit retries are off (no ``retry_options``).
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
    checked_endpoint,
    endpoint_http_client,
    parse_request,
    parse_retry_after,
    text_result,
    upstream_error,
)
from forecourt.adapters.models.jobs import JobActions
from forecourt.adapters.models.vertex_rest import BatchPredictionJobs, VertexRest
from forecourt.adapters.models.vertex_sessions import ConversationMemory, session_id
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.errors import InvalidParams, Timeout

if TYPE_CHECKING:  # google-genai is imported on first use: ~0.3 s and tens of MB in every process otherwise
    import httpx
    from google.genai import Client, types

logger = logging.getLogger(__name__)

RUNTIME = "vertex"


@contextlib.contextmanager
def provider_errors() -> Iterator[None]:
    """Turn the SDK's and httpx's exceptions into gateway errors (never carrying Google's message)."""
    import httpx
    from google.genai import errors

    try:
        yield
    except errors.APIError as exc:
        status = int(exc.code) if isinstance(exc.code, int) else 502
        headers = getattr(exc.response, "headers", None)
        retry_after = parse_retry_after(headers.get("retry-after")) if headers is not None else None
        logger.warning("Vertex AI answered HTTP %d (%s)", status, exc.status or "-")
        raise upstream_error(RUNTIME, status, retry_after=retry_after) from exc
    except httpx.TimeoutException as exc:
        logger.warning("Vertex AI timed out")
        raise Timeout(details={"runtime": RUNTIME}) from exc
    except httpx.HTTPError as exc:
        logger.warning("Vertex AI unreachable: %s", type(exc).__name__)
        raise upstream_error(RUNTIME, None) from exc


def _contents(request: ModelRequest) -> list[types.Content]:
    from google.genai import types

    return [
        types.Content(role="model" if m.role == "assistant" else "user", parts=[types.Part(text=m.content)])
        for m in request.prompt_messages
    ]


def _generation_config(request: ModelRequest) -> types.GenerateContentConfig:
    from google.genai import types

    p = request.params
    return types.GenerateContentConfig(
        system_instruction=request.system_text,
        temperature=p.get("temperature"),
        max_output_tokens=p.get("maxOutputTokens"),
        top_p=p.get("topP"),
        top_k=p.get("topK"),
        stop_sequences=list(p["stop"]) if p.get("stop") else None,
        seed=p.get("seed"),
    )


def _finish(response: types.GenerateContentResponse) -> str | None:
    candidates = response.candidates or []
    reason = candidates[0].finish_reason if candidates else None
    return str(reason.value if hasattr(reason, "value") else reason) if reason else None


def _chunk(response: types.GenerateContentResponse) -> ModelChunk:
    usage = response.usage_metadata
    return ModelChunk(
        text=_text(response),
        finish_reason=_finish(response),
        input_tokens=usage.prompt_token_count if usage else None,
        output_tokens=usage.candidates_token_count if usage else None,
        total_tokens=usage.total_token_count if usage else None,
        model_version=response.model_version,
    )


def _text(response: types.GenerateContentResponse) -> str:
    # ``response.text`` warns on non-text parts; only the text parts of the first candidate are the answer.
    candidates = response.candidates or []
    if not candidates or candidates[0].content is None:
        return ""
    return "".join(part.text or "" for part in candidates[0].content.parts or [] if not part.thought)


def _new_client(
    project: str, location: str, base_url: str | None, api_version: str, timeout_s: float, pin: bool | None = None
) -> tuple[Client, httpx.AsyncClient]:
    """The SDK client and its HTTP client; ``pin`` (a company's ``base_url``: whether private targets are allowed)
    checks every connection's address when it is made and connects to exactly that address."""
    from google.genai import Client, types

    from forecourt.adapters.models.vertex_token import CallToken

    http = endpoint_http_client(pin)
    options: dict[str, Any] = {"api_version": api_version, "timeout": int(timeout_s * 1000), "httpx_async_client": http}
    if base_url:
        options["base_url"] = base_url
    client = Client(
        vertexai=True,
        project=project,
        location=location,
        credentials=CallToken(),
        http_options=types.HttpOptions(**options),
    )
    return client, http


async def _close_client(pair: tuple[Client, httpx.AsyncClient]) -> None:
    client, http = pair
    await client.aio.aclose()
    client.close()  # the SDK's own synchronous HTTP client
    await http.aclose()  # ours: the SDK leaves a client it was given open


class VertexAdapter:
    """Runs ``vertex.invokeModel`` (and ``model.invoke`` calls routed to Vertex)."""

    id = RUNTIME

    def __init__(self, defaults: Mapping[str, Any] | None = None) -> None:
        """Create the adapter.

        Args:
            defaults: The operator's configuration of this adapter (its ``base_url`` is trusted; a company's
                different one only with ``allow_company_endpoints``).
        """
        self.defaults = dict(defaults or {})
        self._pinned: dict[str, bool] = {}
        self._clients: LoopLocal[tuple[Client, httpx.AsyncClient]] = LoopLocal(_close_client)
        self.rest = VertexRest(self)
        self.batch = JobActions("vertex.batchPredict", BatchPredictionJobs(self.rest))
        self.memory = ConversationMemory()

    def check_configured(self, config: Mapping[str, Any]) -> None:
        """Refuse a call before its credential is minted when no project or location is configured."""
        if not config.get("project") or not config.get("location"):
            raise RuntimeNotConfigured(details={"runtime": RUNTIME})

    async def endpoint(self, context: ExecutionContext) -> str | None:
        """The configured ``base_url`` this call may use (``None``: Google's regional endpoint)."""
        if not context.adapter_config.get("base_url"):
            return None
        url = await checked_endpoint(
            context.adapter_config.get("base_url"),
            operator_url=self.defaults.get("base_url"),
            allow_company=self.defaults.get("allow_company_endpoints") is True,
            settings=context.settings,
            runtime=RUNTIME,
        )
        if url != self.defaults.get("base_url"):  # a company's endpoint: connections go only to checked addresses
            self._pinned[url.rstrip("/")] = context.settings.allow_private_targets
        return url

    def pinned_for(self, url: str) -> bool | None:
        """For a request URL under a company's ``base_url``: whether private targets are allowed; else ``None``."""
        for base, allow_private in self._pinned.items():
            if url == base or url.startswith(base + "/"):
                return allow_private
        return None

    async def _client(self, context: ExecutionContext) -> Client:
        config = context.adapter_config
        project, location = config.get("project"), config.get("location")
        if not project or not location:
            raise RuntimeNotConfigured(details={"runtime": RUNTIME})
        credential = context.credential
        if credential is None or credential.kind != "bearer" or not credential.value:
            raise RuntimeNotConfigured("Vertex AI needs a Google credential.", details={"runtime": RUNTIME})
        timeout_s = float(config.get("timeout_s", context.action.timeout_s))
        base_url = await self.endpoint(context)
        api_version = str(config.get("api_version") or "v1")
        from forecourt.adapters.models.vertex_token import CALL_TOKEN

        CALL_TOKEN.set(credential.value)  # this task's token; the shared client reads it per request
        key = f"{project}|{location}|{base_url}|{api_version}|{timeout_s}"
        pin = self.pinned_for(base_url) if base_url else None
        pair = self._clients.get(
            key, lambda: _new_client(str(project), str(location), base_url, api_version, timeout_s, pin)
        )
        return pair[0]

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the action: ``generateContent`` (with the session's memory when asked), ``endpoints.predict``, a
        batch prediction job action, or a session action."""
        name = context.action.name
        if name == "vertex.predict":
            return await self.rest.predict(payload, context)
        if self.batch.handles(name):
            return await self.batch.execute(payload, context)
        if name.startswith("vertex.sessions."):
            return await self.memory.execute(payload, context)
        request = parse_request(payload, context.adapter_config)
        if request.kind != "text":
            raise InvalidParams("vertex.invokeModel generates text; embeddings are embedding.create's job.")
        if not payload.get("memory"):
            return await self._generate(request, context)
        sid = session_id(payload, context)
        key = self.memory.key(context, sid)
        result = await self._generate(await self.memory.with_history(request, key, context), context)
        turns = await self.memory.remember(key, request, str(result.output), context)
        result.metadata["session"] = {"id": sid, "turns": turns}
        return result

    async def _generate(self, request: ModelRequest, context: ExecutionContext) -> AdapterResult:
        """One ``generateContent`` call (``streamGenerateContent`` assembled, when ``stream: true``)."""
        if request.stream:
            return await assemble(RUNTIME, request, self._stream(request, context))
        client = await self._client(context)
        with provider_errors():
            response = await client.aio.models.generate_content(
                model=request.model, contents=_contents(request), config=_generation_config(request)
            )
        chunk = _chunk(response)
        return text_result(
            RUNTIME,
            request,
            chunk.text,
            input_tokens=chunk.input_tokens,
            output_tokens=chunk.output_tokens,
            total_tokens=chunk.total_tokens,
            finish_reason=chunk.finish_reason,
            model_version=chunk.model_version,
        )

    async def _stream(self, request: ModelRequest, context: ExecutionContext) -> AsyncIterator[ModelChunk]:
        client = await self._client(context)
        with provider_errors():
            responses = await client.aio.models.generate_content_stream(
                model=request.model, contents=_contents(request), config=_generation_config(request)
            )
            async for response in responses:
                yield _chunk(response)

    async def stream(self, payload: Mapping[str, Any], context: ExecutionContext) -> AsyncIterator[ModelChunk]:
        """The completion's pieces as Vertex AI streams them (server-sent events); a call with memory answers in one
        piece (its turns are kept only once the whole answer is known)."""
        if payload.get("memory"):
            result = await self.execute(payload, context)
            yield ModelChunk(text=str(result.output), total_tokens=result.metadata.get("tokens"))
            return
        request = parse_request(payload, context.adapter_config)
        if request.kind != "text":
            raise InvalidParams("Only text completions stream.")
        async for chunk in self._stream(request, context):
            yield chunk

    async def aclose(self) -> None:
        """Close the SDK clients (and their HTTP clients) of the running loop, and the REST and session clients."""
        await self._clients.aclose()
        await self.rest.aclose()
        await self.memory.aclose()
