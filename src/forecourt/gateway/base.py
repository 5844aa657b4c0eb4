"""Gateway interfaces: who is calling, what they asked for, and the pluggable backends of the pipeline.

Every backend here has an in-memory implementation and a Redis one (for many replicas), and one
contract test suite runs against both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

# The caller and the credential an adapter gets are part of the contract between actions and adapters (they ride on
# ExecutionContext); they are named here too because the gateway's stages make and hand them out.
from forecourt.contract import AuthMethod, IssuedCredential, Principal

Surface = Literal["rest", "mcp", "a2a", "stdio", "workflow", "internal", "cli", "console"]

__all__ = [
    "AuthMethod",
    "Authenticator",
    "CredentialProvider",
    "Credentials",
    "IdempotencyEntry",
    "IdempotencyStore",
    "Invocation",
    "IssuedCredential",
    "Outcome",
    "Principal",
    "RateDecision",
    "RateLimiter",
    "ResultCache",
    "RevocationList",
    "Surface",
]


@dataclass(frozen=True)
class Credentials:
    """What the wire presented, before anything is verified."""

    bearer: str | None = None
    client_cert_pem: str | None = None
    """A client certificate verified by this server's TLS layer (uvicorn with a CA bundle)."""
    forwarded_cert: str | None = None
    """A client certificate forwarded in a header by a proxy; trusted only from configured proxy addresses."""
    peer_address: str | None = None
    """The TCP peer (a proxy, when there is one): decides whether forwarded certificates are believed."""
    client_address: str | None = None
    """The client as the trusted proxies forwarded it (``X-Forwarded-For``), else the TCP peer."""
    forwarded_for: str | None = None
    """``X-Forwarded-For`` as received; believed only from a trusted proxy (see gateway.client_address)."""


@dataclass(frozen=True)
class Invocation:
    """One call into the gateway, from any front door."""

    action: str
    payload: Mapping[str, Any]
    credentials: Credentials = Credentials()
    surface: Surface = "internal"
    request_id: str | None = None
    trace_id: str | None = None
    traceparent: str | None = None
    session_id: str | None = None
    claimed_agent_id: str | None = None
    company_context: str | None = None
    claimed_type: str | None = None
    allow_side_effects: bool = True
    idempotency_key: str | None = None
    dealership_id: str | None = None
    """The dealership the front door addresses (e.g. from ``/dealers/{id}/...``); must agree with the payload."""
    anonymous_dealership: str | None = None
    """Set by a surface serving a public dealer agent: a call without credentials may act as anonymous here."""
    principal: Principal | None = None
    """A caller the surface already authenticated (stdio, workflows); skips credential verification."""


@dataclass
class Outcome:
    """The result of a successful invocation."""

    action: str
    result_type: str
    output: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    dealership_id: str | None = None
    duration_ms: float = 0.0
    trace_id: str = ""
    processed_by: str = ""
    cached: bool = False
    replayed: bool = False
    rate_limit: RateDecision | None = None


@dataclass(slots=True)
class RateDecision:
    """The state of the tightest limit that applied to a call (one per limit per call: slots, not frozen, as a
    frozen dataclass pays for every field it sets; nothing changes a decision once made)."""

    allowed: bool
    limit: int
    remaining: int
    reset_after_s: float
    retry_after_s: float = 0.0
    scope: str = "member"


class RateLimiter(Protocol):
    """Fixed-window-with-sliding-estimate or token-bucket limiter; atomic across replicas in Redis."""

    async def hit(self, key: str, limit: int, window_s: float) -> RateDecision:
        """Count one call against ``key``; the decision says whether it is allowed."""
        ...

    async def hit_many(self, hits: Sequence[tuple[str, int, float]]) -> list[RateDecision]:
        """Count one call against every ``(key, limit, window_s)`` at once: all or none.

        The call is counted against every key only when every key allows it; otherwise none is touched
        (a call refused by one limit uses up none of the others). One decision per hit, in order.
        """
        ...


class ResultCache(Protocol):
    """Cache of non-sensitive results, keyed by tenant + action + normalised payload."""

    async def get(self, key: str) -> bytes | None: ...
    async def set(self, key: str, value: bytes, ttl_s: float) -> None: ...


@dataclass(frozen=True)
class IdempotencyEntry:
    """What was stored for an idempotency key: the request digest and, once done, the response."""

    request_digest: str
    response: bytes | None


class IdempotencyStore(Protocol):
    """Idempotency keys for side-effect actions (24 h)."""

    async def reserve(self, key: str, request_digest: str, ttl_s: float) -> IdempotencyEntry | None:
        """Claim ``key`` for this request; returns the existing entry if someone already did."""
        ...

    async def complete(self, key: str, request_digest: str, response: bytes, ttl_s: float) -> None:
        """Store the response for a claimed key."""
        ...

    async def release(self, key: str) -> None:
        """Drop a claim whose call failed, so a retry can run."""
        ...


class RevocationList(Protocol):
    """API keys revoked since this process loaded them; shared across replicas through Redis."""

    async def revoke(self, prefix: str) -> None: ...
    async def is_revoked(self, prefix: str) -> bool: ...


class Authenticator(Protocol):
    """Turns presented credentials into a principal, or declines (``None``) so the next one can try."""

    async def authenticate(self, credentials: Credentials, company_hint: str | None) -> Principal | None: ...


class CredentialProvider(Protocol):
    """Mints or fetches a short-lived credential for an adapter, per call."""

    async def issue(self, adapter_id: str, company_id: str | None, config: Mapping[str, Any]) -> IssuedCredential: ...

    def rejected(self, adapter_id: str, config: Mapping[str, Any], credential: IssuedCredential) -> None:
        """The runtime refused ``credential`` before its expiry: never hand it out again (no-op if not cached)."""
        ...
