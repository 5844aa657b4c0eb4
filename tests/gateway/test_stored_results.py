"""The result cache's decoded results: one decoding per stored body, never a stale one."""

from __future__ import annotations

from typing import Any

from forecourt.actions.base import AdapterResult
from forecourt.gateway.backends.memory import MemoryIdempotencyStore, MemoryResultCache
from forecourt.gateway.stored_results import DecodedResults, StoredResults


def _runner(outputs: list[Any]) -> Any:
    async def run() -> AdapterResult:
        return AdapterResult(output=outputs.pop(0), result_type="test", metadata={})

    return run


async def test_a_hit_reuses_the_result_decoded_from_the_same_bytes() -> None:
    stored = StoredResults(MemoryResultCache(), MemoryIdempotencyStore())
    first, hit = await stored.cached("a.read", "1", "scope", {"q": 1}, 60, _runner([{"n": [1, 2]}]))
    assert not hit
    second, hit = await stored.cached("a.read", "1", "scope", {"q": 1}, 60, _runner([]))
    third, _ = await stored.cached("a.read", "1", "scope", {"q": 1}, 60, _runner([]))
    assert hit
    assert first is second is third  # the miss kept what it stored
    assert second.output == {"n": [1, 2]}


async def test_bytes_written_again_under_the_same_key_are_decoded_afresh() -> None:
    decoded = DecodedResults()
    old = decoded.restore("k", b'{"output": {"price": 1}, "type": "t", "metadata": {}}')
    assert decoded.restore("k", b'{"output": {"price": 1}, "type": "t", "metadata": {}}') is old  # equal bytes
    new = decoded.restore("k", b'{"output": {"price": 2}, "type": "t", "metadata": {}}')
    assert new.output == {"price": 2}
    assert old.output == {"price": 1}


def test_decoded_results_are_bounded() -> None:
    decoded = DecodedResults(size=2)
    bodies = {k: f'{{"output": "{k}", "type": "t", "metadata": {{}}}}'.encode() for k in "abc"}
    kept = {k: decoded.restore(k, body) for k, body in bodies.items()}
    assert decoded.restore("c", bodies["c"]) is kept["c"]
    assert decoded.restore("a", bodies["a"]) is not kept["a"]  # the oldest went
