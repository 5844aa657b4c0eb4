"""Store views handed to adapters."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from forecourt.domain.vehicle import Vehicle
from forecourt.errors import InternalError
from forecourt.store.base import Store, UnitOfWork

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import PushNotificationConfigStore


class ReadOnlyStore:
    """A :class:`Store` whose every unit of work is a read (``store.read()``)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def transaction(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A read-only unit of work."""
        return self._store.read()

    def read(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A read-only unit of work."""
        return self._store.read()

    async def ping(self) -> bool:
        """Whether the database answers."""
        return await self._store.ping()

    async def bulk_load_vehicles(
        self,
        vehicles: Iterable[Vehicle],
        *,
        dealership_id: str | None = None,
        batch_size: int = 5_000,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """A read-only view never writes."""
        raise InternalError()

    def push_config_store(self, owner_resolver: Callable[[ServerCallContext], str]) -> PushNotificationConfigStore:
        """The underlying store's A2A push-config store."""
        return self._store.push_config_store(owner_resolver)

    async def close(self) -> None:
        """Views own no connections; closing one does nothing."""
