"""The one cache seam: every cache and memo of the process is a named, bounded :class:`Cache` made here.

House style 11 (shared/DESIGN.md): a cache is named, bounded (in entries, and in age where what it holds can
change), keyed by values (never by the ``id()`` of an object it does not hold), exported in ``/metrics`` and
cleared by one switch in tests. This module is that seam, at the bottom of the import graph (the standard library
only), so the store, the actions, the gateway and the surfaces all make their caches here:

- :func:`lru` makes a cache of at most ``size`` entries, the least recently used dropped first; with ``max_age_s``
  an entry is also dropped once it is that old (on its next read); with ``max_bytes`` (a cache of ``bytes`` or
  ``str`` values: the result caches) its values also stay within that many bytes (``len`` of each).
  ``put(..., max_age_s=...)`` ages one entry differently (the result cache: each action has its own time to live).
- :class:`HeldMemo` is the one memo keyed by an object's identity: an entry holds its object and is used only for
  that very object, so an address reused by a new object after the old one is gone never finds the old answer.
  Use it only where no value key is cheap (a schema, a dialect); the value it derives should be a value.
- Counts are kept per name (all caches of a name together: several gateways in one process each have theirs):
  hits, misses, evictions (for size or age), entries and the bytes held by caches with ``max_bytes``;
  :func:`snapshot` reads them (``gateway/telemetry`` turns them into ``forecourt_process_cache_*`` series),
  :func:`clear_all` empties every cache (the tests' one switch),
  and :func:`disable` makes named caches miss every time, :func:`time_misses` times what each miss costs until the
  value it lacked is put (what ``bench/cache_earnings.py`` measures a cache's gain with).
- :func:`memo` is a function's :class:`Cache` by its arguments' values (what ``functools.lru_cache`` was used for).
- :func:`once` is not a cache: a process constant built at its first use (package data read once, a class declared
  once). It has no key space and never changes, so it is not bounded, counted or cleared.

``functools.cache`` and ``lru_cache`` are not used in ``src/forecourt`` but for this allow-list, each "a constant,
not a cache: no key space, never changes" (``tests/test_caching.py`` reads the source and fails on any other use):

- ``domain/aap_spec.py``: ``documents``, ``registry``, ``validators``, ``_bundles``, the shipped AAP schemas (package
  data) read, linked, compiled and bundled once; domain/ may not import this module (the "domain" contract).

The caches are plain ``OrderedDict``s behind a few lines rather than ``cachetools``: side by side on this machine
its LRU hit cost about what a hit here costs (0.5-1.1 µs against 0.6), its TTL hit 6 to 10 times as much
(3.8-6.4 µs), and the hot path reads aging caches on every call.
"""

from __future__ import annotations

import random
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

__all__ = [
    "Cache",
    "CacheInfo",
    "HeldMemo",
    "Memo",
    "Once",
    "clear_all",
    "disable",
    "enable_all",
    "lru",
    "memo",
    "miss_costs",
    "once",
    "snapshot",
    "time_misses",
]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")
P = ParamSpec("P")

Clock = Callable[[], float]
_MISSING: Any = object()


class _Counts:
    """What one name's caches have done, all of them together."""

    __slots__ = ("evictions", "hits", "misses")

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self.evictions = 0


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """One name's caches at a glance: counts since the process started, entries now, the bounds."""

    name: str
    hits: int
    misses: int
    evictions: int
    entries: int
    size: int
    max_age_s: float | None
    held_bytes: int = 0
    """The bytes of the values held now (caches made with ``max_bytes``; 0 for the others)."""

    @property
    def hit_rate(self) -> float:
        """Hits over lookups (0 before any)."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


class _Family:
    """Every live cache of one name, and their counts."""

    def __init__(self, name: str, size: int, max_age_s: float | None) -> None:
        self.name = name
        self.size = size
        self.max_age_s = max_age_s
        self.counts = _Counts()
        self.members: weakref.WeakSet[_Clearable] = weakref.WeakSet()
        self.disabled = False
        self.miss_costs: list[float] = []


class _Clearable:
    """What the registry does with a cache: empty it, switch it off and on, count its entries."""

    def clear(self) -> None:
        raise NotImplementedError

    def _switch(self, on: bool) -> None:
        raise NotImplementedError

    def _time(self, on: bool, sample: float) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def held_bytes(self) -> int:
        """The bytes of the values held (0 unless the cache is bounded in bytes)."""
        return 0


_FAMILIES: dict[str, _Family] = {}
_LOCK = threading.Lock()
_TIMED_KEPT = 100_000  # miss costs kept per name while timing


def _join(name: str, member: _Clearable, size: int, max_age_s: float | None) -> _Family:
    if not name or size < 1:
        raise ValueError("a cache needs a name and a size of at least 1")
    with _LOCK:
        family = _FAMILIES.get(name)
        if family is None:
            family = _FAMILIES[name] = _Family(name, size, max_age_s)
        family.size = max(family.size, size)
        family.members.add(member)
        return family


class Cache(_Clearable, Generic[K, V]):
    """At most ``size`` entries by key, the least recently used dropped first; aged out after ``max_age_s``.

    Reads and writes are single ``OrderedDict`` operations (safe on the event loop and between threads under the
    GIL: a racing reader may miss an entry another thread drops, never read a wrong one). ``None`` cannot be told
    apart from a miss by :meth:`get`; store a sentinel where ``None`` is an answer worth keeping.
    """

    def __init__(
        self,
        name: str,
        size: int,
        *,
        max_age_s: float | None = None,
        clock: Clock = time.monotonic,
        max_bytes: int | None = None,
    ) -> None:
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.name = name
        self.size = size
        self.max_age_s = max_age_s
        self.max_bytes = max_bytes
        self._clock = clock
        self._data: OrderedDict[K, Any] = OrderedDict()
        self._family = _join(name, self, size, max_age_s)
        self._counts = self._family.counts
        self._aging = max_age_s is not None
        self._held = 0  # bytes of the values held, when bounded in bytes
        if self._family.disabled:
            self._switch(False)

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value kept under ``key``, else ``default`` (counted as a hit or a miss)."""
        entry = self._data.get(key, _MISSING)
        if entry is _MISSING:
            self._counts.misses += 1
            return default
        if self._aging:
            deadline, entry = entry
            if deadline <= self._clock():
                self._drop(key)
                self._counts.misses += 1
                return default
        try:  # noqa: SIM105 - a try costs nothing here, contextlib.suppress a call
            self._data.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile: the value read is still the one kept
            pass
        self._counts.hits += 1
        return entry  # type: ignore[no-any-return]

    def put(self, key: K, value: V, *, max_age_s: float | None = None) -> None:
        """Keep ``value`` under ``key`` (``max_age_s``: this entry's age, else the cache's), dropping the oldest.

        In a cache bounded in bytes, a value larger than the whole bound is not kept (nor what ``key`` held).
        """
        data = self._data
        if self.max_bytes is not None:
            self._unweigh(data.pop(key, None))
            if len(value) > self.max_bytes:  # type: ignore[arg-type]
                return
            self._held += len(value)  # type: ignore[arg-type]
        if self._aging or max_age_s is not None:
            if not self._aging:
                raise ValueError(f"cache {self.name!r} does not age its entries")
            data[key] = (self._clock() + (max_age_s if max_age_s is not None else self.max_age_s or 0.0), value)
        else:
            data[key] = value
        data.move_to_end(key)
        while len(data) > self.size or (self.max_bytes is not None and self._held > self.max_bytes):
            try:
                _, dropped = data.popitem(last=False)
            except KeyError:
                break
            self._unweigh(dropped)
            self._counts.evictions += 1

    def _unweigh(self, entry: Any) -> None:
        """Take a dropped entry's value out of the bytes held (caches bounded in bytes)."""
        if entry is None or self.max_bytes is None:
            return
        self._held = max(self._held - len(entry[1] if self._aging else entry), 0)

    @property
    def held_bytes(self) -> int:
        """The bytes of the values held now (0 unless made with ``max_bytes``)."""
        return self._held

    def peek(self, key: K) -> V | None:
        """The value kept under ``key`` whatever its age, without counting or reordering (``None``: none kept)."""
        entry = self._data.get(key)
        if entry is not None and self._aging:
            return entry[1]  # type: ignore[no-any-return]
        return entry

    def pop(self, key: K) -> V | None:
        """Forget ``key``; the value it held (``None`` when there was none)."""
        entry = self._data.pop(key, None)
        self._unweigh(entry)
        if entry is not None and self._aging:
            return entry[1]  # type: ignore[no-any-return]
        return entry  # type: ignore[no-any-return]

    def clear(self) -> None:
        """Forget every entry."""
        self._data.clear()
        self._held = 0

    def __iter__(self) -> Iterator[K]:
        """The keys kept now, least recently used first (a copy: the cache may change meanwhile)."""
        return iter(list(self._data))

    def __len__(self) -> int:
        return len(self._data)

    def _drop(self, key: K) -> None:
        entry = self._data.pop(key, _MISSING)
        if entry is not _MISSING:
            self._unweigh(entry)
            self._counts.evictions += 1

    def _switch(self, on: bool) -> None:
        if on:
            self.__dict__.pop("get", None)
            self.__dict__.pop("put", None)
            return
        self.clear()
        counts = self._counts

        def get(key: K, default: V | None = None) -> V | None:
            counts.misses += 1
            return default

        def put(key: K, value: V, *, max_age_s: float | None = None) -> None:
            return None

        self.get = get  # type: ignore[method-assign]
        self.put = put  # type: ignore[method-assign]

    def _time(self, on: bool, sample: float) -> None:
        self.__dict__.pop("get", None)
        self.__dict__.pop("put", None)
        if not on:
            return
        plain_get, plain_put = self.get, self.put
        waiting: dict[K, float] = {}
        costs = self._family.miss_costs
        draw = random.Random(len(self.name)).random  # noqa: S311 - which hits are timed: no secret

        def get(key: K, default: V | None = None) -> V | None:
            value = plain_get(key, _MISSING)
            if value is _MISSING or draw() < sample:
                if len(waiting) > _TIMED_KEPT:
                    waiting.clear()
                waiting[key] = time.thread_time()
                return default
            return value

        def put(key: K, value: V, *, max_age_s: float | None = None) -> None:
            started = waiting.pop(key, None)
            if started is not None and len(costs) < _TIMED_KEPT:
                costs.append(time.thread_time() - started)
            plain_put(key, value, max_age_s=max_age_s)

        self.get = get  # type: ignore[method-assign]
        self.put = put  # type: ignore[method-assign]


def lru(
    name: str,
    size: int,
    *,
    max_age_s: float | None = None,
    clock: Clock = time.monotonic,
    max_bytes: int | None = None,
) -> Cache[Any, Any]:
    """A new :class:`Cache` named ``name`` (see the module docstring)."""
    return Cache(name, size, max_age_s=max_age_s, clock=clock, max_bytes=max_bytes)


class HeldMemo(Generic[T, V]):
    """What ``make`` derives from an object, remembered by the object's identity while the entry holds it.

    An entry keeps its object alive, so the object's ``id()`` cannot be handed to another object while the entry
    exists, and it is used only when the object looked up *is* the one held: a schema rebuilt at a recycled
    address is derived afresh. At most ``size`` objects are held, the least recently used let go first.
    """

    def __init__(self, name: str, size: int, make: Callable[[T], V]) -> None:
        self._make = make
        self._cache: Cache[int, tuple[T, V]] = Cache(name, size)

    def __call__(self, obj: T) -> V:
        """``make(obj)``, computed once while ``obj`` is held."""
        entry = self._cache.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        value = self._make(obj)
        self._cache.put(id(obj), (obj, value))
        return value

    def clear(self) -> None:
        """Let go of every object."""
        self._cache.clear()

    def __len__(self) -> int:
        return len(self._cache)


class Memo(Generic[P, V]):
    """``fn``'s answers by the values of its arguments, in a :class:`Cache` named ``name`` (exceptions are not kept).

    The arguments must be hashable values; an answer is computed again once its entry is dropped (size or age).
    """

    def __init__(self, name: str, size: int, fn: Callable[P, V], *, max_age_s: float | None = None) -> None:
        self._fn = fn
        self.cache: Cache[Hashable, V] = Cache(name, size, max_age_s=max_age_s)
        self.__name__ = getattr(fn, "__name__", name)
        self.__qualname__ = getattr(fn, "__qualname__", name)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> V:
        key: Hashable = (args, tuple(kwargs.items())) if kwargs else args
        cache = self.cache
        value = cache.get(key, _MISSING)
        if value is _MISSING:
            value = self._fn(*args, **kwargs)
            cache.put(key, value)
        return value  # type: ignore[return-value]


def memo(name: str, size: int, *, max_age_s: float | None = None) -> Callable[[Callable[P, V]], Memo[P, V]]:
    """Decorate a function so that its answers are kept in a :class:`Memo` named ``name``."""

    def decorate(fn: Callable[P, V]) -> Memo[P, V]:
        return Memo(name, size, fn, max_age_s=max_age_s)

    return decorate


class Once(Generic[V]):
    """A process constant: ``make()`` run at the first call (once, whichever thread asks first), then that value.

    Not a cache: no key space, nothing that changes, so nothing to bound, count or clear (:func:`clear_all` leaves
    it). A ``make`` that raises is run again at the next call.
    """

    def __init__(self, make: Callable[[], V]) -> None:
        self._make = make
        self._value: Any = _MISSING
        self._lock = threading.Lock()
        self.__name__ = getattr(make, "__name__", "once")
        self.__qualname__ = getattr(make, "__qualname__", "once")
        self.__doc__ = make.__doc__
        self.__wrapped__ = make

    def __call__(self) -> V:
        value = self._value
        if value is _MISSING:
            with self._lock:
                if self._value is _MISSING:
                    self._value = self._make()
                value = self._value
        return value  # type: ignore[no-any-return]


def once(make: Callable[[], V]) -> Once[V]:
    """Decorate a function of no arguments whose answer is a process constant (see :class:`Once`)."""
    return Once(make)


def snapshot() -> list[CacheInfo]:
    """Every cache name's counts and entries now, by name."""
    with _LOCK:
        families = sorted(_FAMILIES.values(), key=lambda f: f.name)
        members = [(f, list(f.members)) for f in families]
    return [
        CacheInfo(
            name=f.name,
            hits=f.counts.hits,
            misses=f.counts.misses,
            evictions=f.counts.evictions,
            entries=sum(len(m) for m in live),
            size=f.size,
            max_age_s=f.max_age_s,
            held_bytes=sum(m.held_bytes for m in live),
        )
        for f, live in members
    ]


def clear_all() -> None:
    """Empty every cache of the process (the counts stay: they only ever grow)."""
    with _LOCK:
        live = [m for f in _FAMILIES.values() for m in list(f.members)]
    for member in live:
        member.clear()


def disable(*names: str) -> None:
    """Make the caches named ``names`` (those made later too) miss every time and keep nothing."""
    with _LOCK:
        for name in names:
            family = _FAMILIES.get(name)
            if family is None:
                family = _FAMILIES[name] = _Family(name, 1, None)
            family.disabled = True
            for member in list(family.members):
                member._switch(False)


def enable_all() -> None:
    """Undo :func:`disable`."""
    with _LOCK:
        for family in _FAMILIES.values():
            family.disabled = False
            for member in list(family.members):
                member._switch(True)


def time_misses(on: bool, *, sample: float = 0.0) -> None:
    """Time each miss until the value it lacked is put (``on``), or stop; the costs timed so far are dropped.

    ``sample``: the share of hits answered as misses too (so a cache that always hits is timed in a warm process;
    its caller computes the value again and puts it back). The time is the CPU time of the thread that missed (other
    processes on a busy machine do not count). For benchmarks only: run one call at a time, as a miss's time includes
    whatever else its thread runs before the put. A timed cache costs a little more on every lookup.
    """
    with _LOCK:
        for family in _FAMILIES.values():
            family.miss_costs.clear()
            for member in list(family.members):
                member._time(on, sample)


def miss_costs() -> dict[str, list[float]]:
    """The CPU seconds each timed miss took, by cache name (see :func:`time_misses`)."""
    with _LOCK:
        return {name: list(family.miss_costs) for name, family in _FAMILIES.items() if family.miss_costs}
