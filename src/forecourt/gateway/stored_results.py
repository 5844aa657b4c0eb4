"""Results the gateway keeps to answer a call again: the result cache and idempotency-key replays.

Both stages wrap the adapter call (``run``) and answer from a stored result when there is one:

- :meth:`StoredResults.cached`: a cacheable read, keyed by action, version, the freshness scope (the
  dealership's change generation, company, redaction and profile) and the payload's digest. A hit is counted
  in ``forecourt_cache_hits_total``.
- :meth:`StoredResults.idempotent`: a write with an idempotency key, reserved before it runs (a concurrent
  second call is refused ``idempotency.in_progress``), completed with its result afterwards (a replay with the
  same payload gets it back; another payload under the same key is ``idempotency.conflict``), released when
  the write fails so that it can be retried.

A cache hit is answered from bytes the backend holds (memory or Redis), decoded afresh for each hit: keeping the
decoded results beside their bytes (and the front doors' renderings of them, by the decoded object's identity)
saved under 1 % of a call's CPU on the mixed workload (docs/benchmarks.md, "Every cache, and what it earns").
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Hashable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import orjson

from forecourt.contract import AdapterResult
from forecourt.errors import IdempotencyConflict, IdempotencyInProgress
from forecourt.gateway.base import IdempotencyStore, ResultCache
from forecourt.gateway.redact import canonical_json, digest

IDEMPOTENCY_TTL_S = 24 * 3600.0

Run = Callable[[], Awaitable[AdapterResult]]
Span = Callable[[str], AbstractContextManager[Any]]


def _no_span(_: str) -> AbstractContextManager[Any]:
    return nullcontext()


def _loads(body: bytes | str) -> Any:
    """A stored result (orjson; the standard library for what it refuses, e.g. NaN written by ``canonical_json``)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


def _stored(result: AdapterResult) -> bytes:
    return canonical_json({"output": result.output, "type": result.result_type, "metadata": result.metadata})


def _restored(body: bytes | str) -> AdapterResult:
    data = _loads(body)
    return AdapterResult(output=data["output"], result_type=data["type"], metadata=data["metadata"])


class StoredResults:
    """The result cache and the idempotency store, as stages around an adapter call."""

    def __init__(self, cache: ResultCache, idempotency: IdempotencyStore) -> None:
        self.cache = cache
        self.idempotency = idempotency

    async def cached(
        self,
        action_name: str,
        version: str,
        scope: str,
        payload: Any,
        ttl_s: float,
        run: Run,
        span: Span = _no_span,
        *,
        form: Hashable | None = None,
    ) -> tuple[AdapterResult, bool]:
        """The stored result of this read, else ``run()``'s (then stored for ``ttl_s``); and whether it was a hit.

        ``form``: the payload frozen (``domain/frozen.py``), when the caller has it.
        """
        key = f"cache:{action_name}:{version}:{scope}:{digest(payload, form)}"
        with span("gateway.cache"):
            cached = await self.cache.get(key)
        if cached is not None:
            return _restored(cached), True
        result = await run()
        await self.cache.set(key, _stored(result), ttl_s)
        return result, False

    async def idempotent(
        self, key: str, payload: Any, run: Run, span: Span = _no_span, *, form: Hashable | None = None
    ) -> tuple[AdapterResult, bool]:
        """The result of the write first made under ``key``, else ``run()``'s; and whether it was a replay."""
        request_digest = digest(payload, form)
        with span("gateway.idempotency"):
            existing = await self.idempotency.reserve(key, request_digest, IDEMPOTENCY_TTL_S)
        if existing is not None:
            if existing.request_digest != request_digest:
                raise IdempotencyConflict()
            if existing.response is None:
                raise IdempotencyInProgress()
            return _restored(existing.response), True
        try:
            result = await run()
        except BaseException:
            await self.idempotency.release(key)
            raise
        await self.idempotency.complete(key, request_digest, _stored(result), IDEMPOTENCY_TTL_S)
        return result, False
