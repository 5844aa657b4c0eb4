"""Authority generations: what makes a change to a member, a key or a policy visible to the very next call.

Principals, member lists, company policies and dealerships are remembered in each process (they are read on
every call). Each remembered value records the **generation** of its company at the time it was read from the
store; any change to a company's members, keys, policies or rooftops moves that generation on, after the change
has committed. Every call reads the generation of the company it concerns (one Redis ``MGET`` with the
deployment-wide generation, which changes that touch unknown companies move) and re-reads a remembered value
whose generation differs. In one process (memory) the generations are a dict; with Redis every replica sees a
change made on any other one at its next call — the same rule that makes a revoked key fail at once.

While Redis is unreachable the generations cannot be read: values are re-read from the store on every call
(fail safe: never an old principal, at the cost of a store read).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

from forecourt.gateway.backends.common import WarnThrottle

if TYPE_CHECKING:
    import redis.asyncio as aioredis

logger = logging.getLogger(__name__)

EVERY_COMPANY = "*"
"""Moved by a change whose companies are not known (it concerns every company)."""

Generation = str
"""An opaque token; equal tokens mean nothing changed in between."""

UNKNOWN: Generation = ""
"""The generation when it could not be read: never equal to a remembered one, so the value is re-read."""


_READ_IN_THIS_CALL: ContextVar[dict[str, Generation] | None] = ContextVar("forecourt_authority_read", default=None)


@contextmanager
def read_once_per_call() -> Iterator[None]:
    """Inside the block (one gateway call), each company's generation is read from Redis once.

    A call looks its company's generation up for its principal, its policies (authorize, rate limits, redaction)
    and its members: six ``MGET`` round trips of the same two keys, a tenth of a read's CPU. What the first one
    read holds for the rest of the call, as the call's view of its authority; a change committed meanwhile is
    seen by the next call, as before. A change this call makes itself (:meth:`RedisAuthorityGenerations.moved`)
    drops what it read, so the call's own later reads see it.
    """
    token = _READ_IN_THIS_CALL.set({})
    try:
        yield
    finally:
        _READ_IN_THIS_CALL.reset(token)


class AuthorityGenerations(Protocol):
    """The generation of each company's authority (members, keys, policies, rooftops)."""

    async def current(self, company_id: str) -> Generation:
        """The company's generation now (:data:`UNKNOWN` when it cannot be read)."""
        ...

    async def moved(self, company_ids: Iterable[str]) -> None:
        """Move the generations of ``company_ids`` on (``"*"``: every company), after a change committed."""
        ...


class MemoryAuthorityGenerations:
    """Generations of one process."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    async def current(self, company_id: str) -> Generation:
        """See :meth:`AuthorityGenerations.current`."""
        return f"{self._counts.get(company_id, 0)}.{self._counts.get(EVERY_COMPANY, 0)}"

    async def moved(self, company_ids: Iterable[str]) -> None:
        """See :meth:`AuthorityGenerations.moved`."""
        for company_id in set(company_ids):
            self._counts[company_id] = self._counts.get(company_id, 0) + 1


class RedisAuthorityGenerations:
    """Generations shared by every replica: a counter per company (``INCR``), read with the global one."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = "forecourt:") -> None:
        self._client = client
        self._prefix = f"{prefix}authority:"
        self._warn = WarnThrottle(logger, "authority generations")

    async def current(self, company_id: str) -> Generation:
        """See :meth:`AuthorityGenerations.current` (:data:`UNKNOWN` while Redis is unreachable)."""
        from forecourt.gateway.backends.redis import UNAVAILABLE

        read = _READ_IN_THIS_CALL.get()
        if read is not None and company_id in read:
            return read[company_id]
        try:
            own, every = await self._client.mget(self._prefix + company_id, self._prefix + EVERY_COMPANY)
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "tenant settings are read from the store on every call")
            return UNKNOWN + uuid.uuid4().hex  # equal to nothing remembered (and not kept for the call)
        self._warn.succeeded()
        generation = f"{_text(own)}.{_text(every)}"
        if read is not None:
            read[company_id] = generation
        return generation

    async def moved(self, company_ids: Iterable[str]) -> None:
        """See :meth:`AuthorityGenerations.moved`.

        The change has committed: while Redis is unreachable it is logged and other replicas see it as their
        remembered values age (at most their caches' lifetimes), never refused after the fact.
        """
        from forecourt.gateway.backends.redis import UNAVAILABLE

        read = _READ_IN_THIS_CALL.get()
        if read:
            read.clear()  # this call's own change: its later reads see it
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for company_id in sorted(set(company_ids)):
                    pipe.incr(self._prefix + company_id)
                await pipe.execute()
        except UNAVAILABLE as exc:
            self._warn.failed(exc, "a change to tenant settings reaches other replicas only as their caches age")
            return
        self._warn.succeeded()


def _text(value: bytes | str | None) -> str:
    if value is None:
        return "0"
    return value.decode() if isinstance(value, bytes) else str(value)
