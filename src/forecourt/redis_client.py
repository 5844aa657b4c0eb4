"""The one recipe for a Redis client on a request path: short timeouts and one quick retry.

A dead Redis never hangs a call. The gateway's shared state (``gateway/backends/``: limits, cached results,
idempotency keys, revocations, events) and the model runtimes' (``adapters/models/``: GPU slots, session memory)
connect with it; each decides what to do when Redis does not answer.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

DEFAULT_SOCKET_TIMEOUT_S = 0.5


def connect_redis(url: str, *, socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S) -> aioredis.Redis:
    """A client tuned for a request path: short timeouts and one quick retry, so a dead Redis never hangs a call.

    Args:
        url: ``redis://``, ``rediss://`` or ``unix://`` URL (may hold credentials; never logged).
        socket_timeout_s: Connect and read timeout, in seconds.
    """
    return aioredis.Redis.from_url(
        url,
        socket_timeout=socket_timeout_s,
        socket_connect_timeout=socket_timeout_s,
        retry=Retry(ExponentialBackoff(cap=0.05, base=0.01), retries=1),
        decode_responses=False,
    )
