"""The one cache seam: named, bounded, aging caches with counts per name, one switch to empty them all."""

from __future__ import annotations

import gc
import uuid

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from forecourt import caching
from forecourt.gateway.telemetry import ProcessCaches


def _name() -> str:
    return f"test.{uuid.uuid4().hex[:8]}"


def _info(name: str) -> caching.CacheInfo:
    return next(i for i in caching.snapshot() if i.name == name)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_cache_keeps_at_most_its_size_dropping_the_least_recently_used() -> None:
    name = _name()
    cache = caching.lru(name, 2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    info = _info(name)
    assert (info.hits, info.misses, info.evictions, info.entries, info.size) == (3, 1, 1, 2, 2)
    assert info.hit_rate == 0.75


def test_an_aging_cache_forgets_an_entry_once_it_is_as_old_as_its_max_age() -> None:
    name, clock = _name(), FakeClock()
    cache = caching.lru(name, 10, max_age_s=5.0, clock=clock)
    cache.put("k", "v")
    cache.put("short", "v", max_age_s=1.0)
    clock.now += 1.0
    assert (cache.get("k"), cache.get("short")) == ("v", None)
    clock.now += 4.0
    assert cache.get("k") is None
    assert len(cache) == 0
    assert _info(name).evictions == 2


def test_a_cache_bounded_in_bytes_drops_the_least_recently_used_until_its_values_fit() -> None:
    name, clock = _name(), FakeClock()
    cache = caching.lru(name, 100, max_age_s=60.0, clock=clock, max_bytes=10)
    cache.put("a", b"1234")
    cache.put("b", b"5678")
    assert cache.get("a") == b"1234"  # "b" is now the least recently used
    cache.put("c", b"90ab")  # 12 bytes: "b" goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (b"1234", None, b"90ab")
    assert cache.held_bytes == 8
    cache.put("a", b"12")  # a replaced value is weighed anew
    assert cache.held_bytes == 6
    cache.put("huge", b"x" * 11)  # larger than the whole bound: not kept, nothing else dropped
    assert (cache.get("huge"), len(cache), cache.held_bytes) == (None, 2, 6)
    cache.pop("c")
    assert cache.held_bytes == 2
    clock.now += 60.0
    assert cache.get("a") is None  # aged out: its bytes go too
    assert cache.held_bytes == 0
    cache.put("d", b"1")
    caching.clear_all()
    assert (len(cache), cache.held_bytes, _info(name).held_bytes) == (0, 0, 0)


def test_the_bytes_a_cache_holds_are_a_prometheus_series() -> None:
    name = _name()
    cache = caching.lru(name, 4, max_bytes=1024)
    registry = CollectorRegistry()
    series = ProcessCaches(registry)
    cache.put("k", b"x" * 100)
    series.sync()
    assert f'forecourt_process_cache_bytes{{cache="{name}"}} 100.0' in generate_latest(registry).decode()


def test_an_entry_age_is_refused_by_a_cache_that_does_not_age() -> None:
    with pytest.raises(ValueError, match="does not age"):
        caching.lru(_name(), 1).put("k", "v", max_age_s=1.0)


def test_caches_of_one_name_are_counted_together() -> None:
    name = _name()
    first, second = caching.lru(name, 4), caching.lru(name, 4)
    first.put(1, 1)
    second.put(2, 2)
    assert (first.get(1), second.get(2), first.get(1)) == (1, 2, 1)
    info = _info(name)
    assert (info.hits, info.entries) == (3, 2)
    del second
    gc.collect()
    assert _info(name).entries == 1  # a cache that is gone holds nothing


def test_clear_all_empties_every_cache_and_keeps_the_counts() -> None:
    name = _name()
    cache = caching.lru(name, 4)
    cache.put(1, 1)
    assert cache.get(1) == 1
    caching.clear_all()
    assert (len(cache), cache.get(1)) == (0, None)
    assert (_info(name).hits, _info(name).misses) == (1, 1)


def test_a_disabled_cache_misses_every_time_until_enabled_again() -> None:
    name = _name()
    cache = caching.lru(name, 4)
    cache.put(1, 1)
    caching.disable(name)
    try:
        later = caching.lru(name, 4)
        for one in (cache, later):
            one.put(2, 2)
            assert (one.get(1), one.get(2), len(one)) == (None, None, 0)
    finally:
        caching.enable_all()
    cache.put(1, 1)
    assert cache.get(1) == 1


def test_a_held_memo_answers_only_for_the_very_object_it_holds() -> None:
    made: list[int] = []

    def make(schema: dict[str, str]) -> str:
        made.append(id(schema))
        return schema["type"]

    memo: caching.HeldMemo[dict[str, str], str] = caching.HeldMemo(_name(), 1, make)
    first = {"type": "integer"}
    assert memo(first) == memo(first) == "integer"
    assert len(made) == 1
    for _ in range(50):  # whether or not a new object lands on a freed address, it is derived afresh
        memo.clear()
        del first
        first = {"type": "string"}
        assert memo(first) == "string"
        first = {"type": "integer"}
        assert memo(first) == "integer"


def test_the_counts_of_every_cache_become_prometheus_series_per_cache() -> None:
    name = _name()
    cache = caching.lru(name, 1)
    registry = CollectorRegistry()
    series = ProcessCaches(registry)
    cache.put(1, 1)
    cache.get(1)
    cache.get(2)
    cache.put(2, 2)
    series.sync()
    cache.get(2)
    series.sync()
    text = generate_latest(registry).decode()
    assert f'forecourt_process_cache_hits_total{{cache="{name}"}} 2.0' in text
    assert f'forecourt_process_cache_misses_total{{cache="{name}"}} 1.0' in text
    assert f'forecourt_process_cache_evictions_total{{cache="{name}"}} 1.0' in text
    assert f'forecourt_process_cache_entries{{cache="{name}"}} 1.0' in text


def test_peek_reads_an_entry_whatever_its_age_without_counting() -> None:
    name, clock = _name(), FakeClock()
    cache = caching.lru(name, 4, max_age_s=1.0, clock=clock)
    cache.put("k", "v")
    clock.now += 5.0
    assert (cache.peek("k"), cache.peek("other"), list(cache)) == ("v", None, ["k"])
    assert (_info(name).hits, _info(name).misses) == (0, 0)


def test_timed_misses_measure_the_cpu_until_the_value_is_put_and_sampled_hits_count_as_misses() -> None:
    name = _name()
    cache = caching.lru(name, 64)
    caching.time_misses(True, sample=1.0)  # every hit answered as a miss too
    try:
        assert cache.get("k") is None
        sum(range(20_000))  # the work a miss pays for
        cache.put("k", 1)
        assert cache.get("k") is None  # sampled: the caller computes it again
        cache.put("k", 1)
        costs = caching.miss_costs()[name]
    finally:
        caching.time_misses(False)
    assert len(costs) == 2
    assert costs[0] > 0
    assert cache.get("k") == 1
    assert name not in caching.miss_costs()


def test_a_memo_keeps_answers_by_argument_values_in_a_named_bounded_cache() -> None:
    name, calls = _name(), []

    @caching.memo(name, 2)
    def double(x: int, *, plus: int = 0) -> int:
        calls.append(x)
        return 2 * x + plus

    assert [double(1), double(1), double(2), double(1, plus=1), double(1)] == [2, 2, 4, 3, 2]
    assert calls == [1, 2, 1, 1]  # the keyword call pushed 2 out, then 1 (plain) came back after it
    info = _info(name)
    assert (info.hits, info.entries, info.size) == (1, 2, 2)
    assert double.__name__ == "double"
    caching.clear_all()
    assert double(1) == 2
    assert calls[-1] == 1


def test_a_memo_keeps_no_failure() -> None:
    calls: list[int] = []

    @caching.memo(_name(), 8)
    def fail(x: int) -> int:
        calls.append(x)
        raise ValueError(x)

    for _ in range(2):
        with pytest.raises(ValueError, match="3"):
            fail(3)
    assert calls == [3, 3]


def test_once_builds_a_constant_at_first_use_and_clear_all_leaves_it() -> None:
    calls: list[int] = []

    @caching.once
    def constant() -> dict[str, int]:
        calls.append(1)
        return {"a": 1}

    first = constant()
    caching.clear_all()
    assert constant() is first
    assert calls == [1]


# caching.py's allow-list: "a constant, not a cache: no key space, never changes" (domain/ may not import caching).
FUNCTOOLS_CACHE_ALLOWED = {
    ("domain/aap_spec.py", "documents"),
    ("domain/aap_spec.py", "registry"),
    ("domain/aap_spec.py", "validators"),
    ("domain/aap_spec.py", "_bundles"),
}


def test_functools_caches_are_only_the_listed_constants() -> None:
    import ast
    from pathlib import Path

    root = Path(caching.__file__).parent
    found: set[tuple[str, str]] = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "caching.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "functools"
            for alias in node.names
            if alias.name in ("cache", "lru_cache")
        }
        uses = [
            node
            for node in ast.walk(tree)
            if (isinstance(node, ast.Name) and node.id in names)
            or (
                isinstance(node, ast.Attribute)
                and node.attr in ("cache", "lru_cache")
                and ast.unparse(node.value) == "functools"
            )
        ]
        decorating = {
            id(use): node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for deco in node.decorator_list
            for use in ast.walk(deco)
        }
        for use in uses:
            found.add((rel, decorating.get(id(use), f"line {use.lineno}")))
    assert found <= FUNCTOOLS_CACHE_ALLOWED, (
        f"not on caching.py's allow-list: {sorted(found - FUNCTOOLS_CACHE_ALLOWED)}"
    )
