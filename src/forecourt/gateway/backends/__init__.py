"""The gateway's shared-state backends, in memory (one replica) or in Redis (many), chosen by settings.

``build_backends(settings)`` picks Redis when ``settings.redis_url`` is set, else memory; see
:mod:`forecourt.gateway.backends.redis` for how each Redis backend behaves while Redis is down.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from forecourt.gateway.backends.authority import AuthorityGenerations, MemoryAuthorityGenerations
from forecourt.gateway.backends.console_sessions import MemorySessionRegistry, SessionRegistry
from forecourt.gateway.backends.events import EventBus, MemoryEventBus
from forecourt.gateway.backends.memory import (
    DEFAULT_CACHE_MAX_BYTES,
    MemoryIdempotencyStore,
    MemoryRateLimiter,
    MemoryResultCache,
    MemoryRevocationList,
)
from forecourt.gateway.backends.protections import (
    BudgetMeters,
    MemoryBudgetMeters,
    MemorySessionTaint,
    SessionTaint,
)
from forecourt.gateway.base import IdempotencyStore, RateLimiter, ResultCache, RevocationList
from forecourt.settings import Settings

__all__ = ["Backends", "build_backends"]


@dataclass
class Backends:
    """The four pipeline backends and the event bus, sharing one Redis client when Redis is configured.

    Attributes:
        kind: ``"redis"`` or ``"memory"``.
        rate_limiter: Counts calls against limits.
        cache: Cached results of cacheable actions.
        idempotency: Claims and responses of side-effect calls with an idempotency key.
        revocations: API-key prefixes revoked since keys were loaded.
        events: Change-event fan-out (to other replicas too, with Redis).
        console_sessions: Live console sessions (sign-out ends one on every replica).
        authority: Generations of each company's members, keys and policies (a change is seen by the next call).
    """

    kind: Literal["memory", "redis"]
    rate_limiter: RateLimiter
    cache: ResultCache
    idempotency: IdempotencyStore
    revocations: RevocationList
    events: EventBus
    console_sessions: SessionRegistry = field(default_factory=MemorySessionRegistry)
    authority: AuthorityGenerations = field(default_factory=MemoryAuthorityGenerations)
    taint: SessionTaint = field(default_factory=MemorySessionTaint)
    """Sessions that have read untrusted output (gateway/protections.py)."""
    budget_meters: BudgetMeters = field(default_factory=MemoryBudgetMeters)
    """Budget counters per member and key (gateway/budgets.py)."""
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list, repr=False)
    ping: Callable[[], Awaitable[object]] | None = field(default=None, repr=False)
    """One round trip to the shared store (Redis ``PING``); ``None`` in memory. For ``/readyz`` and metrics."""

    async def close(self) -> None:
        """Close the event bus, then the Redis connections; idempotent."""
        closers, self._closers = self._closers, []
        for close in closers:
            await close()


def memory_backends(cache_max_entries: int = 10_000, cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES) -> Backends:
    """In-process backends for a single replica."""
    events = MemoryEventBus()
    return Backends(
        kind="memory",
        rate_limiter=MemoryRateLimiter(),
        cache=MemoryResultCache(max_entries=cache_max_entries, max_bytes=cache_max_bytes),
        idempotency=MemoryIdempotencyStore(),
        revocations=MemoryRevocationList(),
        events=events,
        _closers=[events.close],
    )


def redis_backends(settings: Settings) -> Backends:
    """Redis backends sharing one connection pool (plus one pub/sub connection for the event bus)."""
    from forecourt.gateway.backends.authority import RedisAuthorityGenerations
    from forecourt.gateway.backends.console_sessions import RedisSessionRegistry
    from forecourt.gateway.backends.events import RedisEventBus
    from forecourt.gateway.backends.protections import RedisBudgetMeters, RedisSessionTaint
    from forecourt.gateway.backends.redis import (
        RedisIdempotencyStore,
        RedisRateLimiter,
        RedisResultCache,
        RedisRevocationList,
        connect_redis,
    )

    assert settings.redis_url is not None
    client = connect_redis(settings.redis_url)
    prefix = settings.redis_prefix
    events = RedisEventBus(client, prefix=prefix)
    return Backends(
        kind="redis",
        rate_limiter=RedisRateLimiter(client, prefix=prefix, fail_mode=settings.rate_limit_fail_mode),
        cache=_redis_cache(RedisResultCache(client, prefix=prefix), settings),
        idempotency=RedisIdempotencyStore(client, prefix=prefix),
        revocations=RedisRevocationList(client, prefix=prefix),
        events=events,
        console_sessions=RedisSessionRegistry(client, prefix=prefix),
        authority=RedisAuthorityGenerations(client, prefix=prefix),
        taint=RedisSessionTaint(client, prefix=prefix),
        budget_meters=RedisBudgetMeters(client, prefix=prefix, fail_mode=settings.rate_limit_fail_mode),
        _closers=[events.close, client.aclose],
        ping=client.ping,
    )


def _redis_cache(shared: ResultCache, settings: Settings) -> ResultCache:
    """The replicas' cache, with this process's memory in front unless ``cache_local_ttl_s`` is 0."""
    if settings.cache_local_ttl_s <= 0:
        return shared
    from forecourt.gateway.backends.tiered import TieredResultCache

    local = MemoryResultCache(max_entries=settings.cache_local_max_entries, max_bytes=settings.cache_max_bytes)
    return TieredResultCache(local, shared, local_ttl_s=settings.cache_local_ttl_s)


def build_backends(settings: Settings) -> Backends:
    """Redis backends when ``settings.redis_url`` is set, else in-memory ones.

    No connection is made here: the first call dials Redis, so a process starts even while Redis is down.
    """
    if settings.redis_url:
        return redis_backends(settings)
    return memory_backends(cache_max_bytes=settings.cache_max_bytes)
