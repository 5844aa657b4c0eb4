"""Results the gateway keeps to answer a call again: the result cache and idempotency-key replays.

Both stages wrap the adapter call (``run``) and answer from a stored result when there is one:

- :meth:`StoredResults.cached`: a cacheable read, keyed by action, version, the freshness scope (the
  dealership's change generation, company, redaction and profile) and the payload's digest. A hit is counted
  in ``forecourt_cache_hits_total``.
- :meth:`StoredResults.idempotent`: a write with an idempotency key, reserved before it runs (a concurrent
  second call is refused ``idempotency.in_progress``), completed with its result afterwards (a replay with the
  same payload gets it back; another payload under the same key is ``idempotency.conflict``), released when
  the write fails so that it can be retried.

A cache hit is answered from bytes the backend holds (memory or Redis). Decoding a page of full records is most
of a hit's work, so the last results this process decoded are kept beside their bytes (:class:`DecodedResults`):
a hit whose bytes are the ones decoded before reuses that result. Such a result is shared by every call that
hits it, so the output of a cached outcome (``Outcome.cached``) is read-only: surfaces serialize or project it,
and anything that hands it to code that may change it (a workflow's script) gives that code a copy.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Hashable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import orjson

from forecourt import caching
from forecourt.contract import AdapterResult
from forecourt.errors import IdempotencyConflict, IdempotencyInProgress
from forecourt.gateway.base import IdempotencyStore, ResultCache
from forecourt.gateway.redact import canonical_json, digest

IDEMPOTENCY_TTL_S = 24 * 3600.0
DECODED_RESULTS = 256

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


class DecodedResults:
    """The last ``size`` cached results this process decoded, each beside the bytes it was decoded from.

    A hit reuses a result only when the backend's bytes equal the ones it came from (the memory backend returns
    the very object; Redis an equal copy, compared in one ``memcmp``), so a result written again by another
    replica is decoded afresh.
    """

    def __init__(self, size: int = DECODED_RESULTS) -> None:
        self._entries: caching.Cache[str, tuple[bytes | str, AdapterResult]] = caching.lru(
            "gateway.decoded_results", size
        )

    def restore(self, key: str, body: bytes | str) -> AdapterResult:
        """The result stored under ``key`` as ``body``, decoded once per distinct body."""
        entry = self._entries.get(key)
        if entry is not None and (entry[0] is body or entry[0] == body):
            return entry[1]
        result = _restored(body)
        self.keep(key, body, result)
        return result

    def keep(self, key: str, body: bytes | str, result: AdapterResult) -> None:
        """Remember ``result`` as the decoding of ``body`` (just stored under ``key``)."""
        self._entries.put(key, (body, result))


class StoredResults:
    """The result cache and the idempotency store, as stages around an adapter call."""

    def __init__(self, cache: ResultCache, idempotency: IdempotencyStore) -> None:
        self.cache = cache
        self.idempotency = idempotency
        self.decoded = DecodedResults()

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
            return self.decoded.restore(key, cached), True
        result = await run()
        body = _stored(result)
        await self.cache.set(key, body, ttl_s)
        self.decoded.keep(key, body, result)
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
