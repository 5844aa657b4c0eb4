"""Gateway interfaces: who is calling, what they asked for, and the pluggable backends of the pipeline.

Every backend here has an in-memory implementation and a Redis one (for many replicas), and one
contract test suite runs against both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from forecourt.domain.tenancy import Member

AuthMethod = Literal["api_key", "oidc", "mtls", "anonymous", "internal"]
Surface = Literal["rest", "mcp", "a2a", "stdio", "workflow", "internal", "cli", "console"]


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
class Principal:
    """An authenticated caller."""

    method: AuthMethod
    company_id: str | None
    member_id: str | None
    profile_id: str | None = None
    member: Member | None = None
    scopes: frozenset[str] = frozenset()
    dealership_ids: frozenset[str] = frozenset()
    expires_at: datetime | None = None
    key_prefix: str | None = None
    subject: str | None = None
    client_address: str | None = None

    @property
    def agent_id(self) -> str | None:
        """``profiles/{profileId}/companies/{companyId}/team/{memberId}`` for members, else ``None``."""
        if self.member is not None:
            return self.member.agent_id
        return None

    @classmethod
    def of_member(cls, member: Member, method: AuthMethod = "api_key", **more: Any) -> Principal:
        """``member`` with all its own scopes and rooftops (a credential that narrows nothing); ``more`` sets the
        rest (``subject``, ``expires_at``, ``client_address``, ...)."""
        return cls(
            method=method,
            company_id=member.company_id,
            member_id=member.id,
            profile_id=member.profile_id,
            member=member,
            scopes=frozenset(member.scopes),
            dealership_ids=frozenset(member.dealership_ids),
            **more,
        )

    @property
    def anonymous(self) -> bool:
        """Whether the caller presented no credential (public AAP skills only)."""
        return self.method == "anonymous"

    @property
    def rate_key(self) -> str:
        """The identity rate limits count against."""
        if self.member_id:
            return f"{self.company_id}/{self.member_id}"
        return f"anon/{self.client_address or 'unknown'}"


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


@dataclass(frozen=True)
class IssuedCredential:
    """A short-lived credential for one adapter call; never logged, never returned, never cached."""

    kind: Literal["bearer", "api_key", "basic", "none"]
    value: str = ""
    expires_at: datetime | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    provider: str = ""
    """Which provider type issued it (``google``, ``jwt``, ``secret``; set by the broker)."""

    def __repr__(self) -> str:
        return f"IssuedCredential(kind={self.kind!r}, value='***', expires_at={self.expires_at!r})"


class CredentialProvider(Protocol):
    """Mints or fetches a short-lived credential for an adapter, per call."""

    async def issue(self, adapter_id: str, company_id: str | None, config: Mapping[str, Any]) -> IssuedCredential: ...

    def rejected(self, adapter_id: str, config: Mapping[str, Any], credential: IssuedCredential) -> None:
        """The runtime refused ``credential`` before its expiry: never hand it out again (no-op if not cached)."""
        ...
