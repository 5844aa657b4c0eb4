"""The SQL store: a unit of work whose repositories share one connection and one transaction."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from forecourt.store.base import (
    AuditRepository,
    ConsentRepository,
    CustomerRepository,
    DeliveryRepository,
    InventoryRepository,
    LeadRepository,
    OutboxRepository,
    ServiceRepository,
    TenancyRepository,
    UnitOfWork,
)
from forecourt.store.sql.context import TxContext
from forecourt.store.sql.engine import READ_ONLY_KEY
from forecourt.store.sql.inline import InlineConnection, inline_read_engine
from forecourt.store.sql.inventory import SqlInventoryRepository
from forecourt.store.sql.people import SqlConsentRepository, SqlCustomerRepository, SqlLeadRepository
from forecourt.store.sql.records import SqlAuditRepository, SqlDeliveryRepository, SqlOutboxRepository
from forecourt.store.sql.service import SqlServiceRepository
from forecourt.store.sql.tenancy import SqlTenancyRepository

logger = logging.getLogger(__name__)


class SqlUnitOfWork:
    """Every repository, bound to one open transaction (implements :class:`~forecourt.store.base.UnitOfWork`)."""

    def __init__(self, conn: AsyncConnection | InlineConnection) -> None:
        ctx = TxContext(conn)
        self.connection = conn
        self.tenancy: TenancyRepository = SqlTenancyRepository(ctx)
        self.inventory: InventoryRepository = SqlInventoryRepository(ctx)
        self.customers: CustomerRepository = SqlCustomerRepository(ctx)
        self.consent: ConsentRepository = SqlConsentRepository(ctx)
        self.leads: LeadRepository = SqlLeadRepository(ctx)
        self.service: ServiceRepository = SqlServiceRepository(ctx)
        self.outbox: OutboxRepository = SqlOutboxRepository(ctx)
        self.audit: AuditRepository = SqlAuditRepository(ctx)
        self.deliveries: DeliveryRepository = SqlDeliveryRepository(ctx)


class SqlStore:
    """:class:`~forecourt.store.base.Store` on an async SQLAlchemy engine (SQLite or PostgreSQL).

    Example:
        >>> store = SqlStore(create_engine("sqlite+aiosqlite:///var/forecourt.db"))  # doctest: +SKIP
        >>> async with store.transaction() as uow:  # doctest: +SKIP
        ...     page = await uow.inventory.search(query)
    """

    def __init__(self, engine: AsyncEngine, *, inline_reads: bool = True) -> None:
        self.engine = engine
        # SQLite files: read units of work run on the calling thread (see forecourt.store.sql.inline).
        self.read_engine = inline_read_engine(engine) if inline_reads else None

    def transaction(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work: committed when the block exits cleanly, rolled back when it raises."""
        return self._transaction()

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[UnitOfWork]:
        async with self.engine.begin() as conn:
            yield SqlUnitOfWork(conn)

    def read(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work for reads only: on SQLite it does not take the write lock, so it never waits for writers."""
        return self._read()

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[UnitOfWork]:
        if self.read_engine is not None:
            with self.read_engine.connect() as sync_conn, sync_conn.begin():
                yield SqlUnitOfWork(InlineConnection(sync_conn))
            return
        async with self.engine.connect() as conn:
            info = (await conn.get_raw_connection()).info
            info[READ_ONLY_KEY] = True
            try:
                async with conn.begin():
                    yield SqlUnitOfWork(conn)
            finally:
                info.pop(READ_ONLY_KEY, None)

    async def ping(self) -> bool:
        """Whether the database answers a trivial query."""
        try:
            async with self.engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        except (SQLAlchemyError, OSError) as exc:
            logger.warning("database ping failed: %s", type(exc).__name__)
            return False
        return True

    async def close(self) -> None:
        """Close every pooled connection."""
        if self.read_engine is not None:
            self.read_engine.dispose()
        await self.engine.dispose()
