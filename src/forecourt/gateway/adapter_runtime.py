"""What the gateway needs to run an adapter: its configuration (with company overrides) and its bulkhead."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from forecourt import caching
from forecourt.errors import Overloaded
from forecourt.store.base import Store


class AdapterConfigSource:
    """Adapter configuration: defaults per adapter, overridden per company (``settings/adapters/{id}``).

    Company overrides are read through a short-lived in-process cache (``ttl_s``; ``OVERRIDES_KEPT`` pairs of
    company and adapter), so a call does not open a database transaction just to learn its adapter settings.
    Admin changes on this replica invalidate it at once (:meth:`invalidate`); other replicas pick them up within
    ``ttl_s``.
    """

    OVERRIDES_KEPT = 4096

    def __init__(
        self,
        defaults: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        ttl_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.defaults: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (defaults or {}).items()}
        self._overrides: caching.Cache[tuple[str, str], tuple[dict[str, Any] | None]] = caching.lru(
            "gateway.adapter_overrides", self.OVERRIDES_KEPT, max_age_s=ttl_s, clock=clock
        )

    async def _override(self, store: Store, adapter_id: str, company_id: str) -> dict[str, Any] | None:
        key = (company_id, adapter_id)
        hit = self._overrides.get(key)  # (override,): a company without one is remembered too
        if hit is not None:
            return hit[0]
        async with store.read() as uow:
            setting = await uow.tenancy.get_adapter_setting(company_id, adapter_id)
        found = dict(setting.config) if setting is not None else None
        self._overrides.put(key, (found,))
        return found

    async def resolve(self, store: Store, adapter_id: str, company_id: str | None) -> dict[str, Any]:
        """The default config with the company's override merged on top (one level deep)."""
        config = dict(self.defaults.get(adapter_id, {}))
        if company_id is None:
            return config
        override = await self._override(store, adapter_id, company_id)
        if override:
            for key, value in override.items():
                if isinstance(value, dict) and isinstance(config.get(key), dict):
                    config[key] = {**config[key], **value}
                else:
                    config[key] = value
        return config

    def invalidate(self) -> None:
        """Forget cached company overrides (after an admin change on this replica)."""
        self._overrides.clear()


class Bulkhead:
    """At most ``size`` concurrent calls into one adapter, and at most ``4 * size`` waiting for a slot.

    A call arriving when the queue is full is shed at once with a retryable ``overloaded`` error, so a
    slow runtime cannot pile up requests (and memory) behind it.
    """

    def __init__(self, adapter_id: str, size: int) -> None:
        self.adapter_id = adapter_id
        self.size = max(size, 1)
        self.running = 0
        self.waiting = 0
        self._slots = asyncio.Semaphore(self.size)

    async def __aenter__(self) -> None:
        if self._slots.locked() and self.waiting >= self.size * 4:
            raise Overloaded(details={"adapter": self.adapter_id})
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        self.running += 1

    async def __aexit__(self, *exc: object) -> None:
        self.running -= 1
        self._slots.release()


def positive(value: Any, default: float) -> float:
    """``value`` as a positive number, else ``default``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return default
    return float(value)


def check_configured(adapter: object, config: Mapping[str, Any]) -> None:
    """Let an adapter refuse a configuration it cannot run with before the gateway asks for a credential.

    An adapter may define ``check_configured(config)`` raising a structured error (a model runtime raises
    ``models.runtime_not_configured``): a runtime with no project or endpoint then says so, rather than failing on
    the credential it would never need.
    """
    check = getattr(adapter, "check_configured", None)
    if callable(check):
        check(config)
