"""What every model runtime adapter shares: the normalised request, the seed-001 result, error mapping.

A model action's payload (seed 001 §3: ``{model, input, params: {temperature, maxOutputTokens}}``) becomes one
:class:`ModelRequest`; each runtime answers with a :class:`~forecourt.contract.AdapterResult` of type
``model.textCompletion`` (``output``: the text), ``model.embedding`` (``output``: one vector per input) or
``model.inference`` (raw tensors), with ``metadata{tokens, model, runtime, ...}``.

Provider failures never reach a client as the provider wrote them: :func:`upstream_error` turns an HTTP status into
a gateway error (429 → ``upstream.rate_limited`` with ``retry_after``; 5xx and connection failures →
``upstream.unavailable``; both retryable; 400/404/401/403 → terminal codes).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from forecourt.adapters.errors import ModelNotFound, ModelRequestRejected, RuntimeNotConfigured, UpstreamForbidden
from forecourt.contract import AdapterResult
from forecourt.errors import (
    ForecourtError,
    InvalidParams,
    UnsafeTarget,
    UpstreamCredentialRejected,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamUnavailable,
)
from forecourt.netguard import check_url_async
from forecourt.outbound_urls import guarded_transport
from forecourt.settings import Settings

if TYPE_CHECKING:  # httpx is imported when a runtime's first HTTP client is made, not with the catalogue
    import httpx

logger = logging.getLogger(__name__)

Role = Literal["system", "user", "assistant"]
Kind = Literal["text", "embedding"]
TEXT_RESULT = "model.textCompletion"
EMBEDDING_RESULT = "model.embedding"
INFERENCE_RESULT = "model.inference"
MAX_RETRY_AFTER_S = 3600.0


# ---------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Message:
    """One turn of a conversation."""

    role: Role
    content: str


@dataclass(frozen=True)
class ModelRequest:
    """A model call, independent of the runtime."""

    model: str
    kind: Kind = "text"
    messages: tuple[Message, ...] = ()
    system: str | None = None
    texts: tuple[str, ...] = ()
    """The inputs of an embedding call."""
    params: Mapping[str, Any] = field(default_factory=dict)
    stream: bool = False

    @property
    def prompt_messages(self) -> list[Message]:
        """The conversation without system turns (which :attr:`system_text` carries)."""
        return [m for m in self.messages if m.role != "system"]

    @property
    def system_text(self) -> str | None:
        """The system instruction: ``system`` plus any system turns, in order."""
        parts = [self.system] if self.system else []
        parts.extend(m.content for m in self.messages if m.role == "system")
        return "\n\n".join(parts) if parts else None


def _messages(raw: Any) -> tuple[Message, ...]:
    if isinstance(raw, str):
        return (Message("user", raw),)
    out: list[Message] = []
    for item in raw or ():
        if isinstance(item, str):
            out.append(Message("user", item))
        else:
            out.append(Message(item.get("role", "user"), str(item.get("content", ""))))
    return tuple(out)


def parse_request(payload: Mapping[str, Any], config: Mapping[str, Any]) -> ModelRequest:
    """The normalised request of a model action's (schema-validated) payload.

    Args:
        payload: ``{model?, input | messages, system?, kind?, params?, stream?}``.
        config: The runtime's configuration (``default_model``).

    Returns:
        The request.

    Raises:
        InvalidParams: No model is named and the runtime has no default, or an embedding input is not text.
    """
    model = payload.get("model") or config.get("default_model")
    if not isinstance(model, str) or not model:
        raise InvalidParams("A model is required: this runtime has no default model.")
    kind: Kind = "embedding" if payload.get("kind") == "embedding" else "text"
    raw = payload.get("messages", payload.get("input"))
    if kind == "embedding":
        texts = (raw,) if isinstance(raw, str) else tuple(raw or ())
        if not texts or not all(isinstance(t, str) for t in texts):
            raise InvalidParams("An embedding input is a string or a list of strings.")
        return ModelRequest(model=model, kind=kind, texts=texts, params=dict(payload.get("params") or {}))
    messages = _messages(raw)
    if not any(m.role == "user" for m in messages):
        raise InvalidParams("The input needs at least one user message.")
    return ModelRequest(
        model=model,
        kind=kind,
        messages=messages,
        system=payload.get("system"),
        params=dict(payload.get("params") or {}),
        stream=bool(payload.get("stream", False)),
    )


# ---------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ModelChunk:
    """One piece of a streamed completion."""

    text: str
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    model_version: str | None = None


def _tokens(total: int | None, inp: int | None, out: int | None) -> int | None:
    if total is not None:
        return total
    if inp is None and out is None:
        return None
    return (inp or 0) + (out or 0)


def text_result(
    runtime: str,
    request: ModelRequest,
    text: str,
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    total_tokens: int | None = None,
    finish_reason: str | None = None,
    model_version: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> AdapterResult:
    """A ``model.textCompletion`` result with the seed's ``metadata{tokens, model}``."""
    metadata: dict[str, Any] = {
        "model": request.model,
        "tokens": _tokens(total_tokens, input_tokens, output_tokens),
        "runtime": runtime,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }
    if finish_reason:
        metadata["finish_reason"] = finish_reason
    if model_version and model_version != request.model:
        metadata["model_version"] = model_version
    metadata.update(extra or {})
    return AdapterResult(output=text, result_type=TEXT_RESULT, metadata=metadata)


async def assemble(runtime: str, request: ModelRequest, chunks: AsyncIterator[ModelChunk]) -> AdapterResult:
    """Consume a stream into one result whose ``metadata.chunks`` says how many pieces arrived."""
    parts: list[str] = []
    count = 0
    inp = out = total = None
    finish: str | None = None
    version: str | None = None
    async for chunk in chunks:
        count += 1
        parts.append(chunk.text)
        inp = chunk.input_tokens if chunk.input_tokens is not None else inp
        out = chunk.output_tokens if chunk.output_tokens is not None else out
        total = chunk.total_tokens if chunk.total_tokens is not None else total
        finish = chunk.finish_reason or finish
        version = chunk.model_version or version
    return text_result(
        runtime,
        request,
        "".join(parts),
        input_tokens=inp,
        output_tokens=out,
        total_tokens=total,
        finish_reason=finish,
        model_version=version,
        extra={"stream": True, "chunks": count},
    )


def embedding_result(
    runtime: str, request: ModelRequest, vectors: list[list[float]], *, tokens: int | None = None
) -> AdapterResult:
    """A ``model.embedding`` result: one vector per input, in input order."""
    metadata: dict[str, Any] = {
        "model": request.model,
        "tokens": tokens,
        "runtime": runtime,
        "count": len(vectors),
        "dimensions": len(vectors[0]) if vectors else 0,
    }
    return AdapterResult(output=vectors, result_type=EMBEDDING_RESULT, metadata=metadata)


# ---------------------------------------------------------------------------------------------- errors


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), capped at an hour."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def upstream_error(runtime: str, status: int | None, *, retry_after: float | None = None) -> ForecourtError:
    """The gateway error for a runtime's HTTP ``status`` (``None``: the runtime could not be reached).

    The provider's own message is deliberately not carried over: it may echo the prompt or name internal
    resources. The caller logs the exception type and chains it with ``raise ... from``.
    """
    details: dict[str, Any] = {"runtime": runtime}
    if status is not None:
        details["upstream_status"] = status
    error: ForecourtError
    if status is None or status >= 500 or status == 408:
        error = UpstreamUnavailable(details=details)
    elif status == 429:
        if retry_after is not None:
            details["retry_after"] = round(retry_after, 3)
        error = UpstreamRateLimited(details=details)
        if retry_after is not None:
            error.headers["Retry-After"] = str(max(1, int(retry_after + 0.999)))
    elif status == 401:
        error = UpstreamCredentialRejected(details=details)
    elif status == 403:
        error = UpstreamForbidden(details=details)
    elif status == 404:
        error = ModelNotFound(details=details)
    elif status in (400, 413, 422):
        error = ModelRequestRejected(details=details)
    else:
        error = UpstreamError(details=details)
    return error


# ---------------------------------------------------------------------------------------------- plumbing

_C = TypeVar("_C")


class LoopLocal(Generic[_C]):
    """HTTP clients kept per event loop and key: connection pools are bound to the loop that opened them."""

    def __init__(self, close: Callable[[_C], Awaitable[None]]) -> None:
        self._clients: dict[tuple[int, str], tuple[asyncio.AbstractEventLoop, _C]] = {}
        self._close = close

    def get(self, key: str, factory: Callable[[], _C]) -> _C:
        """The client for ``key`` on the running loop, created on first use."""
        loop = asyncio.get_running_loop()
        for k in [k for k, (lp, _) in self._clients.items() if lp.is_closed()]:
            del self._clients[k]
        slot = (id(loop), key)
        found = self._clients.get(slot)
        if found is None:
            found = (loop, factory())
            self._clients[slot] = found
        return found[1]

    async def aclose(self) -> None:
        """Close the clients opened on the running loop (others belong to loops already gone)."""
        loop = asyncio.get_running_loop()
        for slot, (lp, client) in list(self._clients.items()):
            if lp is loop:
                del self._clients[slot]
                await self._close(client)


async def checked_endpoint(
    url: Any,
    *,
    operator_url: Any,
    allow_company: bool,
    settings: Settings,
    runtime: str,
) -> str:
    """The endpoint URL a call may use.

    The operator's own endpoint (from the default configuration) is trusted. A company's different endpoint is
    used only when the operator set ``allow_company_endpoints: true``, and only if it passes the SSRF guard:
    otherwise a company admin could send the gateway's credential, or its requests, anywhere.

    Raises:
        RuntimeNotConfigured: No endpoint, or a company endpoint that is not allowed or not safe.
    """
    if not isinstance(url, str) or not url:
        raise RuntimeNotConfigured(details={"runtime": runtime})
    if url == operator_url:
        return url
    if not allow_company:
        logger.warning("refused a company endpoint override for runtime %s", runtime)
        raise RuntimeNotConfigured("Company endpoints are not allowed for this runtime.", details={"runtime": runtime})
    try:
        await check_url_async(url, allow_private=settings.allow_private_targets)
    except UnsafeTarget as exc:
        raise RuntimeNotConfigured("The configured endpoint is not allowed.", details={"runtime": runtime}) from exc
    return url


def auth_headers(credential: Any) -> dict[str, str]:
    """The headers of the gateway-issued credential (empty when the runtime needs none)."""
    if credential is None:
        return {}
    return dict(getattr(credential, "headers", {}) or {})


def endpoint_http_client(pin: bool | None) -> httpx.AsyncClient:
    """An HTTP client for a model endpoint: ``pin`` (a company's endpoint: whether private targets are allowed) makes
    every connection resolve once and go only to the checked address; ``None`` (the operator's own) is trusted."""
    import httpx

    transport = guarded_transport(allow_private=pin) if pin is not None else None
    return httpx.AsyncClient(follow_redirects=False, transport=transport)
