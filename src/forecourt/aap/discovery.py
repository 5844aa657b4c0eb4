"""Which dealership a discovery request is about: by id, or by the ``Host`` header's configured domain.

Lookups are cached for a few seconds so card fetches (the hottest public URL) do not hit the database.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from forecourt.domain.tenancy import Company, Dealership
from forecourt.store.base import Store

_TTL_S = 5.0


class DealerDirectory:
    """Dealerships (and their companies) for the discovery documents."""

    def __init__(self, store: Store, default_dealership: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._default = default_dealership
        self._clock = clock
        self._cache: dict[str, tuple[float, Dealership | None, Company | None]] = {}

    async def by_id(self, dealership_id: str) -> tuple[Dealership | None, Company | None]:
        """The dealership ``dealership_id`` and its company."""
        hit = self._cache.get(f"id:{dealership_id}")
        now = self._clock()
        if hit is not None and hit[0] > now:
            return hit[1], hit[2]
        async with self._store.transaction() as uow:
            dealer = await uow.tenancy.get_dealership(dealership_id)
            company = await uow.tenancy.get_company(dealer.company_id) if dealer else None
        self._cache[f"id:{dealership_id}"] = (now + _TTL_S, dealer, company)
        return dealer, company

    async def by_host(self, host: str | None) -> tuple[Dealership | None, Company | None]:
        """The dealership whose domain is ``host`` (port ignored), else the configured default dealership."""
        name = (host or "").split(":", 1)[0].strip().lower().rstrip(".")
        if name:
            dealer, company = await self._by_domain(name)
            if dealer is not None:
                return dealer, company
        return await self.by_id(self._default)

    async def _by_domain(self, name: str) -> tuple[Dealership | None, Company | None]:
        hit = self._cache.get(f"host:{name}")
        now = self._clock()
        if hit is not None and hit[0] > now:
            return hit[1], hit[2]
        async with self._store.transaction() as uow:
            dealer = await uow.tenancy.get_dealership_by_domain(name)
            company = await uow.tenancy.get_company(dealer.company_id) if dealer else None
        self._cache[f"host:{name}"] = (now + _TTL_S, dealer, company)
        return dealer, company
