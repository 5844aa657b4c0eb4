"""The result cache around an adapter call: a hit answers what the miss stored, and what is stored again after."""

from __future__ import annotations

from typing import Any

from forecourt.contract import AdapterResult
from forecourt.gateway.backends.memory import MemoryIdempotencyStore, MemoryResultCache
from forecourt.gateway.stored_results import StoredResults


def _runner(outputs: list[Any]) -> Any:
    async def run() -> AdapterResult:
        return AdapterResult(output=outputs.pop(0), result_type="test", metadata={"total": 2})

    return run


async def test_a_hit_answers_what_the_miss_stored() -> None:
    stored = StoredResults(MemoryResultCache(), MemoryIdempotencyStore())
    first, hit = await stored.cached("a.read", "1", "scope", {"q": 1}, 60, _runner([{"n": [1, 2]}]))
    assert not hit
    second, hit = await stored.cached("a.read", "1", "scope", {"q": 1}, 60, _runner([]))
    assert hit
    assert (second.output, second.result_type, second.metadata) == ({"n": [1, 2]}, "test", {"total": 2})
    assert second.output is not first.output  # each hit its own decoding: no call shares another's output


async def test_a_result_stored_again_under_the_same_key_is_what_the_next_hit_answers() -> None:
    cache = MemoryResultCache()
    stored = StoredResults(cache, MemoryIdempotencyStore())
    await stored.cached("a.read", "1", "scope", {"q": 1}, 60, _runner([{"price": 1}]))
    (key,) = list(cache._data)
    await cache.set(key, b'{"output": {"price": 2}, "type": "t", "metadata": {}}', 60)
    again, hit = await stored.cached("a.read", "1", "scope", {"q": 1}, 60, _runner([]))
    assert hit
    assert again.output == {"price": 2}
