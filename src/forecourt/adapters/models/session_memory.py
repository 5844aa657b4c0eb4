"""Conversation memory for model sessions (seed 001 §5 "session state, memory"): a bounded, expiring list of turns
per key, in memory (one replica) or in Redis (every replica sees the same history).

Each append keeps only the newest ``max_turns`` turns and renews the expiry (``ttl_s`` after the last turn); a
turn longer than ``max_chars`` is cut. Deleting a key erases the history at once (redaction on request).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Protocol

from forecourt.adapters.errors import SessionsUnavailable
from forecourt.settings import Settings


class SessionMemory(Protocol):
    """Turns per key."""

    async def load(self, key: str) -> list[dict[str, str]]:
        """The key's turns, oldest first (empty when none or expired)."""
        ...

    async def append(self, key: str, turns: Sequence[dict[str, str]], *, max_turns: int, ttl_s: float) -> None:
        """Add turns, keep the newest ``max_turns``, expire ``ttl_s`` from now."""
        ...

    async def delete(self, key: str) -> bool:
        """Erase the key's turns; whether there were any."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class MemorySessions:
    """Sessions of one process."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[float, list[dict[str, str]]]] = {}

    async def load(self, key: str) -> list[dict[str, str]]:
        """See :meth:`SessionMemory.load`."""
        item = self._items.get(key)
        if item is None or item[0] <= time.monotonic():
            self._items.pop(key, None)
            return []
        return list(item[1])

    async def append(self, key: str, turns: Sequence[dict[str, str]], *, max_turns: int, ttl_s: float) -> None:
        """See :meth:`SessionMemory.append`."""
        kept = [*await self.load(key), *turns][-max_turns:]
        self._items[key] = (time.monotonic() + ttl_s, kept)

    async def delete(self, key: str) -> bool:
        """See :meth:`SessionMemory.delete`."""
        return self._items.pop(key, None) is not None

    async def aclose(self) -> None:
        """Nothing to release."""


class RedisSessions:
    """Sessions shared by every replica: a Redis list per key (RPUSH, LTRIM, PEXPIRE in one transaction)."""

    def __init__(self, client: Any, prefix: str = "", *, owns_client: bool = False) -> None:
        self._client = client
        self._prefix = prefix
        self._owns = owns_client

    def _key(self, key: str) -> str:
        return f"{self._prefix}session:{key}"

    async def load(self, key: str) -> list[dict[str, str]]:
        """See :meth:`SessionMemory.load`."""
        from redis.exceptions import RedisError

        try:
            raw = await self._client.lrange(self._key(key), 0, -1)
        except (RedisError, OSError) as exc:
            raise SessionsUnavailable() from exc
        return [json.loads(item) for item in raw]

    async def append(self, key: str, turns: Sequence[dict[str, str]], *, max_turns: int, ttl_s: float) -> None:
        """See :meth:`SessionMemory.append`."""
        from redis.exceptions import RedisError

        name = self._key(key)
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(name, *[json.dumps(t) for t in turns])
                pipe.ltrim(name, -max_turns, -1)
                pipe.pexpire(name, int(ttl_s * 1000))
                await pipe.execute()
        except (RedisError, OSError) as exc:
            raise SessionsUnavailable() from exc

    async def delete(self, key: str) -> bool:
        """See :meth:`SessionMemory.delete`."""
        from redis.exceptions import RedisError

        try:
            return bool(await self._client.delete(self._key(key)))
        except (RedisError, OSError) as exc:
            raise SessionsUnavailable() from exc

    async def aclose(self) -> None:
        """Close the client if this store opened it."""
        if self._owns:
            await self._client.aclose()


def build_session_memory(settings: Settings) -> SessionMemory:
    """Redis sessions when ``settings.redis_url`` is set (a client of their own), else memory."""
    if settings.redis_url:
        from forecourt.redis_client import connect_redis

        return RedisSessions(connect_redis(settings.redis_url), settings.redis_prefix, owns_client=True)
    return MemorySessions()
