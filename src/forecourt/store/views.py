"""Store views handed to adapters."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from forecourt.store.base import Store, UnitOfWork


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

    async def close(self) -> None:
        """Views own no connections; closing one does nothing."""
