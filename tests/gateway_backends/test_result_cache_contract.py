"""ResultCache contract: get/set with a TTL; memory and Redis."""

from __future__ import annotations

from .support import Rig, eventually


async def test_a_stored_value_is_returned_until_it_expires(rig: Rig) -> None:
    cache = rig.cache()
    await cache.set("inventory.search:abc", b'{"items": []}', 0.2)
    assert await cache.get("inventory.search:abc") == b'{"items": []}'
    rig.clock.advance(0.2)

    async def gone() -> bool:
        return await cache.get("inventory.search:abc") is None

    assert await eventually(gone)


async def test_a_missing_key_is_a_miss(rig: Rig) -> None:
    assert await rig.cache().get("never-set") is None


async def test_setting_a_key_again_replaces_its_value_and_ttl(rig: Rig) -> None:
    cache = rig.cache()
    await cache.set("k", b"old", 0.05)
    await cache.set("k", b"new", 60.0)
    rig.clock.advance(1.0)
    assert await cache.get("k") == b"new"


async def test_a_zero_ttl_removes_the_key(rig: Rig) -> None:
    cache = rig.cache()
    await cache.set("k", b"value", 60.0)
    await cache.set("k", b"other", 0)
    assert await cache.get("k") is None


async def test_binary_values_round_trip_unchanged(rig: Rig) -> None:
    cache = rig.cache()
    value = bytes(range(256)) * 4
    await cache.set("k", value, 60.0)
    assert await cache.get("k") == value


async def test_the_memory_cache_evicts_the_least_recently_used_entry_beyond_its_bound() -> None:
    from forecourt.gateway.backends.memory import MemoryResultCache

    cache = MemoryResultCache(max_entries=2)
    await cache.set("a", b"1", 60.0)
    await cache.set("b", b"2", 60.0)
    assert await cache.get("a") == b"1"  # "b" is now the least recently used
    await cache.set("c", b"3", 60.0)
    assert await cache.get("b") is None
    assert await cache.get("a") == b"1"
    assert await cache.get("c") == b"3"
    assert len(cache) == 2
