"""Pieces every authenticator shares: reading tenancy, the member-to-method rule, and scope narrowing."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from forecourt import caching
from forecourt.domain.tenancy import Company, Member, SecurityType
from forecourt.errors import Unauthorized
from forecourt.gateway.backends.authority import AuthorityGenerations, MemoryAuthorityGenerations
from forecourt.gateway.base import AuthMethod
from forecourt.store.base import TenancyRepository

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

Clock = Callable[[], float]
"""Seconds on a monotonic clock; injectable so tests move time instead of sleeping."""

Now = Callable[[], datetime]
"""The aware UTC wall clock (:func:`forecourt.domain.timeutil.utcnow`); injectable for tests."""


class HasTenancy(Protocol):
    """The part of a unit of work that authentication reads."""

    @property
    def tenancy(self) -> TenancyRepository: ...


class TenancySource(Protocol):
    """Anything that opens units of work exposing ``tenancy`` (a :class:`forecourt.store.base.Store` does)."""

    def transaction(self) -> AbstractAsyncContextManager[HasTenancy]: ...

    def read(self) -> AbstractAsyncContextManager[HasTenancy]:
        """A unit of work for lookups only (authentication never writes)."""
        ...


_ALLOWED_METHODS: dict[SecurityType, frozenset[AuthMethod]] = {
    SecurityType.API_KEY: frozenset({"api_key"}),
    SecurityType.OIDC: frozenset({"oidc"}),
    SecurityType.MTLS: frozenset({"mtls"}),
    SecurityType.ANY: frozenset({"api_key", "oidc", "mtls"}),
}


def require_usable_member(member: Member | None, method: AuthMethod) -> Member:
    """Check that a credential's member exists, is active and may authenticate with ``method``.

    Args:
        member: The member the credential names, or ``None`` when there is none.
        method: How the caller authenticated.

    Returns:
        The member.

    Raises:
        Unauthorized: The member is missing or inactive, or its ``security_type`` excludes ``method``.
    """
    if member is None or not member.active:
        raise Unauthorized("The credential is not valid.")
    if method not in _ALLOWED_METHODS.get(member.security_type, frozenset()):
        logger.info(
            "member %s/%s refused %s: security type is %s",
            member.company_id,
            member.id,
            method,
            member.security_type.value,
        )
        raise Unauthorized("This member may not authenticate with this kind of credential.")
    return member


def narrow(requested: Iterable[str] | None, granted: Iterable[str]) -> frozenset[str]:
    """The granted set narrowed by a request: ``requested ∩ granted``, or all of ``granted`` when none requested.

    Args:
        requested: What the credential asks for (key scopes, token scopes, key dealerships); ``None`` or
            empty means "everything the member has".
        granted: What the member holds.

    Returns:
        The effective set.
    """
    granted_set = frozenset(granted)
    if requested is None:
        return granted_set
    requested_set = frozenset(requested)
    if not requested_set:
        return granted_set
    return requested_set & granted_set


@dataclass
class _Cached(Generic[_T]):
    at: float
    items: list[_T] = field(default_factory=list)
    generation: str = ""
    """The company's authority generation when the list was read (member lists only)."""


MEMBER_LISTS_KEPT = 4096


class MemberDirectory:
    """A short-lived in-process index of companies and members, for lookups the repository has no query for.

    OIDC subjects and certificate fingerprints are matched by scanning members. The company list and each
    company's member list are cached separately for ``ttl_s`` seconds; a miss reloads only the list that
    missed, and at most once every ``min_reload_s`` seconds, so a new member becomes usable quickly while
    a flood of unknown credentials costs at most one query per list per ``min_reload_s``.
    """

    def __init__(
        self,
        source: TenancySource,
        *,
        ttl_s: float = 30.0,
        min_reload_s: float = 2.0,
        clock: Clock = time.monotonic,
        authority: AuthorityGenerations | None = None,
    ) -> None:
        """Create a directory over ``source``.

        Args:
            source: Where companies and members are read.
            ttl_s: How long a loaded list is used.
            min_reload_s: The least time between reloads of one list forced by a miss.
            clock: Monotonic seconds.
            authority: The companies' authority generations: a member list is used only while its company's
                generation is unchanged (a change to a member is seen by the next call on every replica).
        """
        self._source = source
        self._authority: AuthorityGenerations = authority or MemoryAuthorityGenerations()
        self._ttl_s = ttl_s
        self._min_reload_s = min_reload_s
        self._clock = clock
        self._companies: _Cached[Company] | None = None
        self._members: caching.Cache[str, _Cached[Member]] = caching.lru("gateway.auth.member_lists", MEMBER_LISTS_KEPT)

    async def _load_companies(self) -> _Cached[Company]:
        async with self._source.read() as uow:
            companies = await uow.tenancy.list_companies()
        self._companies = _Cached(at=self._clock(), items=companies)
        known = {c.id for c in companies}
        for gone in [cid for cid in self._members if cid not in known]:
            self._members.pop(gone)
        return self._companies

    async def _load_members(self, company_id: str, generation: str) -> _Cached[Member]:
        async with self._source.read() as uow:
            members = await uow.tenancy.list_members(company_id)
        entry = _Cached(at=self._clock(), items=members, generation=generation)
        self._members.put(company_id, entry)
        return entry

    def _stale(self, entry: _Cached[Any] | None, *, after_miss: bool) -> bool:
        if entry is None:
            return True
        age = self._clock() - entry.at
        return age >= self._ttl_s or (after_miss and age >= self._min_reload_s)

    async def _company_list(self, *, after_miss: bool) -> list[Company]:
        entry = self._companies
        if entry is None or self._stale(entry, after_miss=after_miss):
            entry = await self._load_companies()
        return entry.items

    async def _member_list(self, company_id: str, *, after_miss: bool) -> list[Member]:
        generation = await self._authority.current(company_id)
        entry = self._members.get(company_id)
        if entry is None or entry.generation != generation or self._stale(entry, after_miss=after_miss):
            entry = await self._load_members(company_id, generation)
        return entry.items

    async def companies_for_issuer(self, issuer: str) -> list[Company]:
        """Companies whose ``oidc_issuer`` is ``issuer``."""
        for after_miss in (False, True):
            found = [c for c in await self._company_list(after_miss=after_miss) if c.oidc_issuer == issuer]
            if found:
                return found
        return []

    async def members_where(
        self, predicate: Callable[[Member], bool], company_ids: Iterable[str] | None = None
    ) -> list[Member]:
        """Members (of the given companies, or of all) for which ``predicate`` holds."""
        fixed = None if company_ids is None else list(company_ids)
        for after_miss in (False, True):
            ids = fixed if fixed is not None else [c.id for c in await self._company_list(after_miss=after_miss)]
            found = [m for cid in ids for m in await self._member_list(cid, after_miss=after_miss) if predicate(m)]
            if found:
                return found
        return []

    def invalidate(self) -> None:
        """Drop everything; the next lookup reloads."""
        self._companies = None
        self._members.clear()
