"""A result cache in two tiers: this process's memory in front of the cache the replicas share (Redis).

A hit in the local tier costs a dictionary lookup instead of a network round trip. The local copy of an
entry lives at most ``local_ttl_s`` (never longer than the entry itself), so an entry rewritten or expired
in the shared tier is seen by every replica within that bound. Entries of the inventory reads are keyed by
the dealership's change generation (``gateway/freshness.py``): a change makes a new key, so the local tier
adds no staleness to them; for entries that only expire (``dealer.information``) it adds at most
``local_ttl_s``.
"""

from __future__ import annotations

from forecourt.gateway.base import ResultCache


class TieredResultCache:
    """:class:`~forecourt.gateway.base.ResultCache` reading ``local`` first and writing both tiers.

    Args:
        local: This process's cache (a bounded :class:`~forecourt.gateway.backends.memory.MemoryResultCache`).
        shared: The replicas' cache.
        local_ttl_s: The longest a local copy is used.
    """

    def __init__(self, local: ResultCache, shared: ResultCache, *, local_ttl_s: float) -> None:
        if local_ttl_s <= 0:
            raise ValueError("local_ttl_s must be positive")
        self.local = local
        self.shared = shared
        self.local_ttl_s = local_ttl_s

    async def get(self, key: str) -> bytes | None:
        """The local copy, else the shared entry (copied locally for ``local_ttl_s``), else ``None``."""
        value = await self.local.get(key)
        if value is not None:
            return value
        value = await self.shared.get(key)
        if value is not None:
            await self.local.set(key, value, self.local_ttl_s)
        return value

    async def set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Store in both tiers (a TTL of zero or less removes the key from both)."""
        await self.shared.set(key, value, ttl_s)
        await self.local.set(key, value, min(ttl_s, self.local_ttl_s))
