"""API keys: ``fck_<prefix>_<secret>``, stored as the public prefix and an HMAC of the secret, shown once.

The prefix (10 lower-case letters and digits) is the key's public name: it appears in listings, audit
records and the revocation list. The secret never leaves the response to :meth:`ApiKeyService.create`;
the store keeps ``v1$`` + HMAC-SHA256(pepper, prefix + "." + secret), so a stolen database alone cannot
be used to check guesses, and a hash cannot be moved to another prefix.

Revocation is effective on every replica at once: :class:`ApiKeyAuthenticator` asks the shared
:class:`~forecourt.gateway.base.RevocationList` on every call, even when the key record comes from its
short in-process cache.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import string
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import SecretStr

from forecourt import caching
from forecourt.domain.tenancy import TOOLSET_NAMES, Member
from forecourt.domain.timeutil import utcnow
from forecourt.errors import Expired, InvalidParams, MemberNotFound, TenancyDenied, Unauthorized
from forecourt.gateway.auth.common import Clock, Now, TenancySource, narrow, require_usable_member
from forecourt.gateway.backends.authority import (
    UNKNOWN,
    AuthorityGenerations,
    Generation,
    MemoryAuthorityGenerations,
)
from forecourt.gateway.base import Credentials, Principal, RevocationList
from forecourt.settings import Settings
from forecourt.store.base import ApiKeyRecord, TenancyRepository

logger = logging.getLogger(__name__)

KEY_SCHEME = "fck"
PREFIX_LENGTH = 10
SECRET_LENGTH = 40
_PREFIX_ALPHABET = string.ascii_lowercase + string.digits
_SECRET_ALPHABET = string.ascii_letters + string.digits
_KEY_RE = re.compile(rf"^{KEY_SCHEME}_([a-z0-9]{{{PREFIX_LENGTH}}})_([A-Za-z0-9]{{{SECRET_LENGTH}}})$")
_HASH_VERSION = "v1$"


@dataclass(frozen=True)
class ParsedKey:
    """An API key split into its public prefix and its secret."""

    prefix: str
    secret: str

    def __repr__(self) -> str:
        return f"ParsedKey(prefix={self.prefix!r}, secret='***')"


def parse_api_key(token: str) -> ParsedKey | None:
    """Split a presented bearer token into prefix and secret, or ``None`` when it is not an API key.

    Args:
        token: The bearer token.

    Returns:
        The parsed key, or ``None`` when the token does not have the ``fck_<prefix>_<secret>`` shape.
    """
    match = _KEY_RE.match(token.strip())
    if match is None:
        return None
    return ParsedKey(prefix=match.group(1), secret=match.group(2))


def looks_like_api_key(token: str) -> bool:
    """Whether a bearer token is meant as an API key (it starts with ``fck_``) rather than a JWT."""
    return token.strip().startswith(f"{KEY_SCHEME}_")


class ApiKeyHasher:
    """The keyed hash of API key secrets (HMAC-SHA256 with the operator's pepper)."""

    def __init__(self, pepper: SecretStr | str) -> None:
        """Create a hasher.

        Args:
            pepper: ``settings.api_key_pepper``.
        """
        raw = pepper.get_secret_value() if isinstance(pepper, SecretStr) else pepper
        if not raw:
            raise ValueError("the API key pepper must not be empty")
        self._pepper = raw.encode()

    def digest(self, prefix: str, secret: str) -> str:
        """The stored form of a key's secret."""
        mac = hmac.new(self._pepper, f"{prefix}.{secret}".encode(), hashlib.sha256).hexdigest()
        return _HASH_VERSION + mac

    def verify(self, prefix: str, secret: str, stored: str) -> bool:
        """Compare a presented secret with a stored hash in constant time."""
        return hmac.compare_digest(self.digest(prefix, secret).encode(), stored.encode())


@dataclass(frozen=True)
class IssuedApiKey:
    """A freshly created key: ``key`` is the only copy of the plaintext there will ever be."""

    key: str
    record: ApiKeyRecord

    @property
    def prefix(self) -> str:
        """The key's public prefix."""
        return self.record.prefix

    def __repr__(self) -> str:
        return f"IssuedApiKey(prefix={self.record.prefix!r}, key='***')"


class ApiKeyService:
    """Creates, lists and revokes API keys."""

    def __init__(
        self,
        store: TenancySource,
        pepper: SecretStr | str,
        revocations: RevocationList,
        *,
        now: Now = utcnow,
    ) -> None:
        """Create the service.

        Args:
            store: Where key records and members live (a :class:`~forecourt.store.base.Store`).
            pepper: ``settings.api_key_pepper``.
            revocations: The shared revocation list, told about every revocation.
            now: The wall clock (aware UTC).
        """
        self._store = store
        self._hasher = ApiKeyHasher(pepper)
        self._revocations = revocations
        self._now = now

    @classmethod
    def from_settings(cls, settings: Settings, store: TenancySource, revocations: RevocationList) -> ApiKeyService:
        """The service configured from ``settings``."""
        return cls(store, settings.api_key_pepper, revocations)

    async def create(
        self,
        company_id: str,
        member_id: str,
        *,
        name: str = "",
        scopes: tuple[str, ...] = (),
        dealership_ids: tuple[str, ...] = (),
        ttl: timedelta | None = None,
        expires_at: datetime | None = None,
        toolset: str | None = None,
    ) -> IssuedApiKey:
        """Create a key for a member; the plaintext is in the result and nowhere else.

        Args:
            company_id: The member's company.
            member_id: The member the key acts as.
            name: A label for listings.
            scopes: Narrow the key to these of the member's scopes (empty: all of them).
            dealership_ids: Narrow the key to these of the member's dealerships (empty: all of them).
            ttl: Lifetime from now; ignored when ``expires_at`` is given.
            expires_at: Absolute expiry (aware).
            toolset: The MCP toolset this key's callers are offered (``None``: the member's).

        Returns:
            The key and its stored record.

        Raises:
            MemberNotFound: No such member in that company.
            InvalidParams: The expiry is in the past or naive.
        """
        now = self._now()
        if expires_at is None and ttl is not None:
            expires_at = now + ttl
        if expires_at is not None and (expires_at.tzinfo is None or expires_at <= now):
            raise InvalidParams("The key expiry must be an aware time in the future.")
        if toolset is not None and toolset not in TOOLSET_NAMES:
            raise InvalidParams("Unknown toolset.", details={"toolsets": list(TOOLSET_NAMES)})
        async with self._store.transaction() as uow:
            member = await uow.tenancy.get_member(company_id, member_id)
            if member is None:
                raise MemberNotFound()
            _refuse_grants_beyond(member, scopes, dealership_ids)
            prefix = await self._fresh_prefix(uow.tenancy)
            secret = "".join(secrets.choice(_SECRET_ALPHABET) for _ in range(SECRET_LENGTH))
            record = ApiKeyRecord(
                prefix=prefix,
                key_hash=self._hasher.digest(prefix, secret),
                company_id=company_id,
                member_id=member_id,
                name=name,
                scopes=tuple(scopes),
                dealership_ids=tuple(dealership_ids),
                created_at=now,
                expires_at=expires_at,
                toolset=toolset,
            )
            await uow.tenancy.add_api_key(record)
        logger.info("created API key %s for %s/%s", prefix, company_id, member_id)
        return IssuedApiKey(key=f"{KEY_SCHEME}_{prefix}_{secret}", record=record)

    @staticmethod
    async def _fresh_prefix(tenancy: TenancyRepository) -> str:
        for _ in range(5):
            prefix = "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(PREFIX_LENGTH))
            if await tenancy.get_api_key(prefix) is None:
                return prefix
        raise RuntimeError("could not find an unused API key prefix")  # 36**10 space: practically unreachable

    async def revoke(self, prefix: str) -> bool:
        """Revoke a key in the store and on the shared revocation list (every replica, at once).

        Args:
            prefix: The key's public prefix.

        Returns:
            Whether the store knew the key.
        """
        await self._revocations.revoke(prefix)
        async with self._store.transaction() as uow:
            known = await uow.tenancy.revoke_api_key(prefix, self._now())
        logger.info("revoked API key %s", prefix)
        return known

    async def list(self, company_id: str) -> list[ApiKeyRecord]:
        """A company's key records (hashes included; callers must not return them to clients)."""
        async with self._store.transaction() as uow:
            return await uow.tenancy.list_api_keys(company_id)


@dataclass(frozen=True, eq=False)
class _Cached:
    record: ApiKeyRecord
    member: Member | None
    generation: Generation = UNKNOWN
    """The authority generation of the record's company when it was read (``gateway/backends/authority.py``)."""


_VERIFIED_PER_KEY = 4  # principals remembered per key on average (one per caller address)


class ApiKeyAuthenticator:
    """Authenticates ``Authorization: Bearer fck_...`` keys."""

    def __init__(
        self,
        store: TenancySource,
        pepper: SecretStr | str,
        revocations: RevocationList,
        *,
        cache_ttl_s: float = 10.0,
        cache_size: int = 10_000,
        clock: Clock = time.monotonic,
        now: Now = utcnow,
        authority: AuthorityGenerations | None = None,
    ) -> None:
        """Create the authenticator.

        Args:
            store: Where key records and members live.
            pepper: ``settings.api_key_pepper``.
            revocations: The shared revocation list, consulted on every call.
            cache_ttl_s: How long a looked-up record and member are reused (0 disables the cache). A
                member deactivated in the store stops authenticating within this time; a revoked key
                stops at once.
            cache_size: The most records kept.
            clock: Monotonic seconds, for the cache.
            now: The wall clock (aware UTC), for expiry.
            authority: The companies' authority generations: a remembered record or principal is used only while
                its company's generation is unchanged, so a change to the member or the key is seen by the next
                call on every replica (default: this process's own).
        """
        self._store = store
        self._authority: AuthorityGenerations = authority or MemoryAuthorityGenerations()
        self._hasher = ApiKeyHasher(pepper)
        self._revocations = revocations
        self._ttl = cache_ttl_s
        self._now = now
        self._cache: caching.Cache[str, _Cached] = caching.lru(
            "gateway.auth.api_keys", cache_size, max_age_s=cache_ttl_s, clock=clock
        )
        # Principals already built for a key by the caller's address, with the SHA-256 of the secret that verified
        # and the record they were built from: the same key again costs a plain hash instead of the keyed hash.
        self._verified: caching.Cache[tuple[str, str | None], tuple[_Cached, bytes, Principal]] = caching.lru(
            "gateway.auth.verified_keys", cache_size * _VERIFIED_PER_KEY
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        store: TenancySource,
        revocations: RevocationList,
        authority: AuthorityGenerations | None = None,
    ) -> ApiKeyAuthenticator:
        """The authenticator configured from ``settings``."""
        return cls(store, settings.api_key_pepper, revocations, authority=authority)

    async def authenticate(self, credentials: Credentials, company_hint: str | None) -> Principal | None:
        """Verify an API key bearer token.

        Args:
            credentials: What the wire presented.
            company_hint: Unused: a key names its own company (the gateway compares any claimed company).

        Returns:
            The principal, or ``None`` when the bearer token is absent or not an API key.

        Raises:
            Unauthorized: Malformed, unknown, wrong secret, revoked, or its member is inactive or may not
                use API keys.
            Expired: The key is past its expiry.
        """
        del company_hint
        token = credentials.bearer
        if not token or not looks_like_api_key(token):
            return None
        parsed = parse_api_key(token)
        if parsed is None:
            raise Unauthorized("The API key is not valid.")
        if await self._revocations.is_revoked(parsed.prefix):
            self._cache.pop(parsed.prefix)
            logger.info("refused revoked API key %s", parsed.prefix)
            raise Unauthorized("The API key is not valid.")
        entry = await self._lookup(parsed.prefix)
        if entry is None:
            self._hasher.digest(parsed.prefix, parsed.secret)  # same work as a real check: no timing oracle
            raise Unauthorized("The API key is not valid.")
        record = entry.record
        seen = hashlib.sha256(parsed.secret.encode()).digest()
        known = self._verified.get((parsed.prefix, credentials.peer_address))
        if known is not None and known[0] is entry and hmac.compare_digest(known[1], seen):
            if record.expires_at is not None and record.expires_at <= self._now():
                raise Expired("The API key has expired.")
            return known[2]
        if not self._hasher.verify(parsed.prefix, parsed.secret, record.key_hash):
            logger.info("refused API key %s: secret does not match", parsed.prefix)
            raise Unauthorized("The API key is not valid.")
        principal = self._principal(record, entry.member, credentials)
        self._verified.put((parsed.prefix, credentials.peer_address), (entry, seen, principal))
        return principal

    def _principal(self, record: ApiKeyRecord, member: Member | None, credentials: Credentials) -> Principal:
        if record.revoked_at is not None:
            raise Unauthorized("The API key is not valid.")
        if record.expires_at is not None and record.expires_at <= self._now():
            raise Expired("The API key has expired.")
        usable = require_usable_member(member, "api_key")
        if record.toolset is not None:  # the key's toolset shapes what its callers are offered
            usable = usable.model_copy(update={"toolset": record.toolset})
        return Principal(
            method="api_key",
            company_id=record.company_id,
            member_id=record.member_id,
            profile_id=usable.profile_id,
            member=usable,
            scopes=narrow(record.scopes, usable.scopes),
            dealership_ids=narrow(record.dealership_ids, usable.dealership_ids),
            expires_at=record.expires_at,
            key_prefix=record.prefix,
            client_address=credentials.peer_address,
        )

    async def _lookup(self, prefix: str) -> _Cached | None:
        cached = self._cache.get(prefix)
        if cached is not None:
            generation = await self._authority.current(cached.record.company_id)
            if generation == cached.generation:
                return cached
        else:
            loaded = await self._read(prefix)
            if loaded is None:
                return None
            generation = await self._authority.current(loaded.record.company_id)
        # Read (again) after the generation: a change committed meanwhile moves it on, and the next call re-reads.
        entry = await self._read(prefix, generation)
        if entry is not None and self._ttl > 0:
            self._cache.put(prefix, entry)
        return entry

    async def _read(self, prefix: str, generation: Generation = UNKNOWN) -> _Cached | None:
        async with self._store.read() as uow:
            record = await uow.tenancy.get_api_key(prefix)
            member = None if record is None else await uow.tenancy.get_member(record.company_id, record.member_id)
        return None if record is None else _Cached(record=record, member=member, generation=generation)

    def forget(self, prefix: str) -> None:
        """Drop a cached record (e.g. after this replica revoked or rotated it)."""
        self._cache.pop(prefix)


def _refuse_grants_beyond(member: Member, scopes: tuple[str, ...], dealership_ids: tuple[str, ...]) -> None:
    """Refuse a key that names a dealership or a scope its member does not hold.

    A key only ever narrows its member (authentication intersects the two), so such a key would silently
    carry less than it says; naming another company's dealership is also a tenancy probe. Both are refused
    when the key is made, not discovered later.
    """
    outside = sorted(set(dealership_ids) - set(member.dealership_ids))
    if outside:
        raise TenancyDenied("A key can only name dealerships its member is granted.")
    unheld = [i for i, scope in enumerate(scopes) if scope not in member.scopes]
    if unheld:
        problems = [{"path": f"/scopes/{i}", "rule": "not_held_by_member"} for i in unheld[:5]]
        raise InvalidParams("A key can only carry scopes its member holds.", details={"errors": problems})
