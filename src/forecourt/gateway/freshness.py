"""Change-driven freshness of cached results: one generation token per dealership.

Every change to dealer data (vehicles, leads, appointments, ...) is written to the outbox in the same
transaction, and every process's :class:`~forecourt.events.dispatcher.OutboxDispatcher` reads every outbox
event in ``seq`` order. :class:`ChangeGenerations` turns what that dispatcher reads into a token per
dealership that changes whenever the dealership's data may have changed. The gateway puts the token into
the cache key of actions marked ``cache_follows_changes``, so a change makes the old entries unreachable
instead of waiting for their TTL.

How fresh a cached result is:

- In the process that made a change through the gateway: fresh at once. After a side-effect action, the
  dealership's token gets a local suffix (unique to this process) before the call returns, and the
  dispatcher is woken. The suffix stays until a dispatcher poll that started after the change has
  completed, by which time the change's own outbox event has moved the token on.
- In every other process (another replica, after a CLI import): fresh after that process's next
  successful dispatcher poll, i.e. within one poll interval (``FORECOURT_EVENTS_POLL_INTERVAL_S``, default
  0.25 s) plus the poll's duration.
- The tokens are "live" only while the dispatcher polls successfully. Before its first poll, after a failed
  one, once it stops, or when no poll has completed for ``stale_after_s``, :meth:`ChangeGenerations.token`
  returns ``None`` and the gateway runs such actions uncached: it never serves a result that may predate a
  change it has not heard of.

The token of a dealership is the ``seq`` of the newest outbox event read for it, or the dispatcher's start
position when none was read. Processes sharing a Redis cache therefore share entries only when they have
read the same newest event (or started at the same position and read none), and a process started later
never reads an older process's entries made under a token it would not use itself. An event committed
behind one already read (concurrent PostgreSQL transactions) gives a token of its own, marked with that
event's ``seq``; another replica that read both events in ``seq`` order may still hold an entry made in
between under the plain token, which the entry's TTL (the safety net) bounds.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter

from forecourt import caching
from forecourt.gateway.redact import canonical_json

if TYPE_CHECKING:
    from forecourt.contract import Action
    from forecourt.domain.tenancy import Dealership

__all__ = ["ChangeGenerations"]

_LATE_KEPT = 64
_PROFILES_KEPT = 4096


class ChangeGenerations:
    """Per-dealership generation tokens, fed by the outbox dispatcher and by this process's own writes.

    Args:
        stale_after_s: The tokens stop being live when no dispatcher poll has completed for this long
            (a hung database call must not keep stale entries in use); ``None`` never expires them.
        clock: Monotonic seconds (a fake one in tests).
        registry: Where to register ``forecourt_cache_bypassed`` (calls of such actions run uncached
            because the tokens were not live); ``None`` only counts in :attr:`bypassed_count`.
    """

    def __init__(
        self,
        *,
        stale_after_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.stale_after_s = stale_after_s
        self._clock = clock
        self.instance = uuid.uuid4().hex[:12]
        """Part of every local token, so that no other process ever uses the same one."""
        self.waker: Callable[[], None] | None = None
        """Called after a local change (the dispatcher's ``wake``) so the next poll starts at once."""
        self.bypassed_count = 0
        self._bypasses = (
            Counter(
                "forecourt_cache_bypassed",
                "Calls of change-tracked cacheable actions run uncached because change tracking was not live",
                ["action"],
                registry=registry,
            )
            if registry is not None
            else None
        )
        self._start: int | None = None
        self._newest: dict[str, int] = {}
        self._late: dict[str, tuple[int, ...]] = {}
        self._base: dict[str, str] = {}
        self._counter = 0
        self._local: dict[str, tuple[int, int]] = {}
        self._local_all: tuple[int, int] | None = None
        self._polls_started = 0
        self._polling_ok = False
        self._last_ok = 0.0
        self._profiles: caching.Cache[str, tuple[Dealership, str]] = caching.lru(
            "gateway.freshness.profiles", _PROFILES_KEPT
        )

    # ------------------------------------------------------------------ fed by the dispatcher

    def started_at(self, position: int) -> None:
        """The dispatcher's start position: the token of every dealership it has read no event for."""
        if self._start is None:
            self._start = position

    def poll_started(self) -> int:
        """A dispatcher poll begins; returns the ticket to pass to :meth:`poll_succeeded`."""
        self._polls_started += 1
        return self._polls_started

    def observed(self, dealership_id: str, seq: int) -> None:
        """The dispatcher read the outbox event ``seq`` of ``dealership_id`` (whoever publishes it)."""
        newest = self._newest.get(dealership_id, self._start if self._start is not None else 0)
        if seq > newest:
            self._newest[dealership_id] = seq
            self._late.pop(dealership_id, None)
            self._base[dealership_id] = str(seq)
            return
        # Committed behind an event already read: a token nobody used while this event was missing.
        late = (*self._late.get(dealership_id, ()), seq)[-_LATE_KEPT:]
        self._newest[dealership_id] = newest
        self._late[dealership_id] = late
        marks = hashlib.sha256(",".join(map(str, sorted(late))).encode()).hexdigest()[:12]
        self._base[dealership_id] = f"{newest}~{marks}"

    def poll_succeeded(self, ticket: int) -> None:
        """The poll with ``ticket`` read the outbox to its end: live, and local changes before it are covered."""
        self._polling_ok = True
        self._last_ok = self._clock()
        if self._local_all is not None and self._local_all[1] < ticket:
            self._local_all = None
        for dealership_id in [d for d, (_, epoch) in self._local.items() if epoch < ticket]:
            del self._local[dealership_id]

    def poll_failed(self) -> None:
        """A poll failed: events may be missing until one succeeds."""
        self._polling_ok = False

    def stopped(self) -> None:
        """The dispatcher stopped polling."""
        self._polling_ok = False

    # ------------------------------------------------------------------ used by the gateway

    @property
    def live(self) -> bool:
        """Whether the tokens follow the outbox right now."""
        if not self._polling_ok:
            return False
        return self.stale_after_s is None or self._clock() - self._last_ok <= self.stale_after_s

    def token(self, dealership_id: str) -> str | None:
        """The dealership's generation token, or ``None`` while change tracking is not live."""
        if not self.live:
            return None
        base = self._base.get(dealership_id)
        if base is None:
            base = str(self._start if self._start is not None else 0)
        marks = [mark[0] for mark in (self._local.get(dealership_id), self._local_all) if mark is not None]
        return f"{base}.{self.instance}.{max(marks)}" if marks else base

    def changed_locally(self, dealership_id: str | None) -> None:
        """A side-effect call on ``dealership_id`` (``None``: on no dealership, so on any) just finished."""
        self._counter += 1
        mark = (self._counter, self._polls_started)
        if dealership_id is None:
            self._local_all = mark
        else:
            self._local[dealership_id] = mark
        if self.waker is not None:
            self.waker()

    def bypassed(self, action: str) -> None:
        """Count a call that ran uncached because the tokens were not live."""
        self.bypassed_count += 1
        if self._bypasses is not None:
            self._bypasses.labels(action).inc()

    def cache_scope(
        self, action: Action, dealership: Dealership | None, company_id: str | None, redact_fields: frozenset[str]
    ) -> str | None:
        """The part of a cache key besides action and payload; ``None`` when the call must not be cached now.

        A cached result depends on the dealership (its profile too: AAP prices include its tax rate and
        fees), on the company whose redaction policy was applied to it, and, for actions that follow
        changes, on the dealership's generation token.
        """
        if dealership is None:
            if action.cache_follows_changes:
                return None
            where = "-"
        else:
            where = f"{dealership.id}/{self._profile(dealership)}"
            if action.cache_follows_changes:
                token = self.token(dealership.id)
                if token is None:
                    return None
                where = f"{where}@{token}"
        redaction = hashlib.sha256(",".join(sorted(redact_fields)).encode()).hexdigest()[:12] if redact_fields else "-"
        return f"{where}:{company_id or '-'}:{redaction}"

    def _profile(self, dealership: Dealership) -> str:
        """A short digest of the dealership's profile (computed once per loaded copy)."""
        hit = self._profiles.get(dealership.id)
        if hit is not None and hit[0] is dealership:
            return hit[1]
        fingerprint = hashlib.sha256(canonical_json(dealership.model_dump(mode="json"))).hexdigest()[:12]
        self._profiles.put(dealership.id, (dealership, fingerprint))
        return fingerprint
