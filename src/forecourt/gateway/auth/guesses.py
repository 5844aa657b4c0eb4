"""Credential guessing is throttled per client address, on every door and at console sign-in.

Each credential that fails to authenticate (an unknown or wrong API key, operator key, JWT or certificate) counts
against its client's address in the shared rate limiter (``authfail:<address>``, so every replica counts the
same failures). Once a client is over ``FORECOURT_AUTH_FAILURES_PER_MINUTE``, this replica refuses its
credentials without checking them (``rate_limited``, 429, ``scope: auth_failures``) until the limiter would
allow another failure: a guess that might have been right is never even tried. Successful authentications are
never counted, so a busy client with a good key is never slowed.
"""

from __future__ import annotations

import time

from forecourt import caching
from forecourt.errors import RateLimited
from forecourt.gateway.auth.common import Clock
from forecourt.gateway.base import Credentials, RateLimiter

BLOCKS_KEPT = 10_000
"""Client addresses one replica remembers as blocked at most (the oldest go first)."""
SCOPE = "auth_failures"


def client_of(credentials: Credentials) -> str:
    """The client address the failures count against (the forwarded client behind a trusted proxy)."""
    return credentials.client_address or credentials.peer_address or "-"


class GuessThrottle:
    """Counts failed authentications per client address and refuses a client over its limit."""

    def __init__(self, limiter: RateLimiter, per_minute: int, *, clock: Clock = time.monotonic) -> None:
        self._limiter = limiter
        self._per_minute = per_minute
        self._clock = clock
        self._blocked: caching.Cache[str, float] = caching.lru(
            "gateway.auth.guess_blocks", BLOCKS_KEPT, max_age_s=60.0, clock=clock
        )

    def refuse_if_blocked(self, credentials: Credentials) -> None:
        """Raise :class:`RateLimited` while the client is over its failure limit (nothing else is checked)."""
        if self._per_minute <= 0:
            return
        until = self._blocked.get(client_of(credentials))
        if until is not None:
            wait = until - self._clock()
            if wait > 0:
                raise _refusal(wait)

    async def failed(self, credentials: Credentials) -> None:
        """Count one failed authentication; once over the limit the client is refused (this call included)."""
        if self._per_minute <= 0:
            return
        client = client_of(credentials)
        decision = await self._limiter.hit(f"authfail:{client}", self._per_minute, 60.0)
        if not decision.allowed:
            self._blocked.put(client, self._clock() + decision.retry_after_s, max_age_s=decision.retry_after_s)
            raise _refusal(decision.retry_after_s)


def _refusal(wait_s: float) -> RateLimited:
    err = RateLimited(wait_s, scope=SCOPE, message="Too many failed sign-ins from this address; try again later.")
    err.headers = {"Retry-After": str(max(1, int(wait_s + 0.999)))}
    return err
