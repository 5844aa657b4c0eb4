"""The SQL store: a unit of work whose repositories share one connection and one transaction."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from forecourt.domain.vehicle import Vehicle
from forecourt.store.audit_context import pending_audit
from forecourt.store.base import (
    AapRecordRepository,
    AuditRepository,
    ConsentRepository,
    CrmMailRepository,
    CustomerRepository,
    DeliveryRepository,
    FeedSourceRepository,
    InventoryRepository,
    KnowledgeRepository,
    LeadRepository,
    NamedQueryRepository,
    OutboxRepository,
    ServiceRepository,
    TenancyRepository,
    UnitOfWork,
    UpstreamRepository,
    WorkflowRepository,
)
from forecourt.store.sa_asyncio import AsyncConnection, AsyncEngine
from forecourt.store.sql.aap_tables import SqlAapRecordRepository
from forecourt.store.sql.bulk import bulk_load
from forecourt.store.sql.context import TxContext
from forecourt.store.sql.engine import READ_ONLY_KEY
from forecourt.store.sql.feeds import SqlCrmMailRepository, SqlFeedSourceRepository
from forecourt.store.sql.inline import InlineConnection, InlineReads, inline_read_engine
from forecourt.store.sql.inventory import SqlInventoryRepository
from forecourt.store.sql.knowledge import SqlKnowledgeRepository
from forecourt.store.sql.named_queries import SqlNamedQueryRepository
from forecourt.store.sql.people import SqlConsentRepository, SqlCustomerRepository, SqlLeadRepository
from forecourt.store.sql.records import SqlAuditRepository, SqlDeliveryRepository, SqlOutboxRepository
from forecourt.store.sql.service import SqlServiceRepository
from forecourt.store.sql.tenancy import SqlTenancyRepository
from forecourt.store.sql.upstreams import SqlUpstreamRepository
from forecourt.store.sql.vectors import SqlVectorRepository
from forecourt.store.sql.workflows import SqlWorkflowRepository
from forecourt.store.vectors import VectorRepository

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import PushNotificationConfigStore

logger = logging.getLogger(__name__)


R = TypeVar("R")


class _built_on_first_use(Generic[R]):  # noqa: N801 - used like functools.cached_property
    """``functools.cached_property`` without its lock (Python 3.11 takes one on every first use)."""

    def __init__(self, build: Callable[[Any], R]) -> None:
        self._build = build
        self._name = build.__name__
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> _built_on_first_use[R]: ...
    @overload
    def __get__(self, instance: object, owner: type[Any]) -> R: ...
    def __get__(self, instance: object | None, owner: type[Any]) -> R | _built_on_first_use[R]:
        if instance is None:
            return self
        value = instance.__dict__[self._name] = self._build(instance)  # the instance attribute wins from now on
        return value


class SqlUnitOfWork:
    """Every repository, bound to one open transaction (implements :class:`~forecourt.store.base.UnitOfWork`)."""

    def __init__(self, conn: AsyncConnection | InlineConnection) -> None:
        self._ctx = TxContext(conn)
        self.connection = conn

    # Every repository is built on first use: a unit of work touches one or two of them.

    @_built_on_first_use
    def tenancy(self) -> TenancyRepository:
        """Profiles, companies, dealerships, members and their credentials."""
        return SqlTenancyRepository(self._ctx)

    @_built_on_first_use
    def inventory(self) -> InventoryRepository:
        """Vehicles: search, get, upsert."""
        return SqlInventoryRepository(self._ctx)

    @_built_on_first_use
    def customers(self) -> CustomerRepository:
        """Customers of a dealership."""
        return SqlCustomerRepository(self._ctx)

    @_built_on_first_use
    def consent(self) -> ConsentRepository:
        """Consent records."""
        return SqlConsentRepository(self._ctx)

    @_built_on_first_use
    def leads(self) -> LeadRepository:
        """Leads."""
        return SqlLeadRepository(self._ctx)

    @_built_on_first_use
    def service(self) -> ServiceRepository:
        """Repair orders and service slots."""
        return SqlServiceRepository(self._ctx)

    @_built_on_first_use
    def outbox(self) -> OutboxRepository:
        """The change-event outbox."""
        return SqlOutboxRepository(self._ctx)

    @_built_on_first_use
    def audit(self) -> AuditRepository:
        """Audit records."""
        return SqlAuditRepository(self._ctx)

    @_built_on_first_use
    def deliveries(self) -> DeliveryRepository:
        """Outbound deliveries (CRM, push)."""
        return SqlDeliveryRepository(self._ctx)

    @_built_on_first_use
    def feeds(self) -> FeedSourceRepository:
        """Scheduled inventory feed sources."""
        return SqlFeedSourceRepository(self._ctx)

    @_built_on_first_use
    def crm_mail(self) -> CrmMailRepository:
        """CRM mail deliveries."""
        return SqlCrmMailRepository(self._ctx)

    @_built_on_first_use
    def vectors(self) -> VectorRepository:
        """Stored vectors of ``embedding.create`` (their SQL needs the async driver: not on inline read units)."""
        return SqlVectorRepository(self.connection)  # type: ignore[arg-type]

    @_built_on_first_use
    def knowledge(self) -> KnowledgeRepository:
        """Knowledge documents, chunks, vectors and the embedding cache."""
        return SqlKnowledgeRepository(self._ctx)

    @_built_on_first_use
    def workflows(self) -> WorkflowRepository:
        """Workflow definitions, runs and rotation counters."""
        return SqlWorkflowRepository(self._ctx)

    @_built_on_first_use
    def upstreams(self) -> UpstreamRepository:
        """Upstream MCP server definitions per company."""
        return SqlUpstreamRepository(self._ctx)

    @_built_on_first_use
    def named_queries(self) -> NamedQueryRepository:
        """Named query definitions per company, and running them."""
        return SqlNamedQueryRepository(self._ctx)

    @_built_on_first_use
    def aap_records(self) -> AapRecordRepository:
        """AAP push subscriptions and outbox cursors."""
        return SqlAapRecordRepository(self._ctx)


class _InlineRead:
    """A read unit of work on the calling thread (see :mod:`forecourt.store.sql.inline`)."""

    __slots__ = ("_conn", "_dbapi", "_reads")

    def __init__(self, reads: InlineReads) -> None:
        self._reads = reads

    async def __aenter__(self) -> UnitOfWork:
        self._conn, self._dbapi = self._reads.begin()
        return SqlUnitOfWork(InlineConnection(self._conn, self._dbapi))

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self._reads.end(self._conn, self._dbapi, commit=exc_type is None)


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
        self._inline = InlineReads(self.read_engine) if self.read_engine is not None else None
        # PostgreSQL: read units of work run in autocommit, each statement on its own (see :meth:`_read_autocommit`).
        self._autocommit_engine = (
            engine.execution_options(isolation_level="AUTOCOMMIT") if engine.dialect.name == "postgresql" else None
        )

    def transaction(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work: committed when the block exits cleanly, rolled back when it raises."""
        return self._transaction()

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[SqlUnitOfWork]:
        pending = pending_audit.get()
        if pending is not None and pending.written:
            pending = None
        async with self.engine.begin() as conn:
            uow = SqlUnitOfWork(conn)
            yield uow
            if pending is not None:
                # A side-effect call's record commits with its effect (see forecourt.store.audit_context).
                await uow.audit.add_many([pending.build()])
        if pending is not None:
            pending.written = True

    def read(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work for reads only: on SQLite it does not take the write lock, so it never waits for writers."""
        if self._inline is not None:
            return _InlineRead(self._inline)
        if self._autocommit_engine is not None and _isolation(self.engine) == "READ COMMITTED":
            return self._read_autocommit(self._autocommit_engine)
        return self._read()

    @staticmethod
    @asynccontextmanager
    async def _read_autocommit(engine: AsyncEngine) -> AsyncIterator[UnitOfWork]:
        """A PostgreSQL read unit of work: its statements in autocommit, without ``BEGIN`` and ``COMMIT``.

        Under READ COMMITTED (PostgreSQL's default; :meth:`read` checks the server's, known once the engine has
        connected) every statement of a transaction takes a snapshot of its own, so a read-only transaction gives
        its statements nothing that autocommit does not: it only cost two round trips per unit of work (``BEGIN``
        and ``COMMIT``, most of a unit's driver work for a one-statement read).
        Writing in a read unit of work is an error (:meth:`forecourt.store.base.Store.read`): here it would
        commit statement by statement.
        """
        async with engine.connect() as conn:
            yield SqlUnitOfWork(conn)

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[UnitOfWork]:
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

    async def bulk_load_vehicles(
        self,
        vehicles: Iterable[Vehicle],
        *,
        dealership_id: str | None = None,
        batch_size: int = 5_000,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Insert vehicles fast, ``batch_size`` per transaction (see :mod:`forecourt.store.sql.bulk`)."""
        return await bulk_load(
            self._transaction, vehicles, dealership_id=dealership_id, batch_size=batch_size, progress=progress
        )

    def push_config_store(self, owner_resolver: Callable[[ServerCallContext], str]) -> PushNotificationConfigStore:
        """The A2A push-notification config store, in this database (shared by every replica)."""
        from forecourt.store.sql.a2a import push_config_store

        return push_config_store(self.engine, owner_resolver)

    async def close(self) -> None:
        """Close every pooled connection."""
        if self._inline is not None:
            self._inline.dispose()
        await self.engine.dispose()


def _isolation(engine: AsyncEngine) -> str | None:
    """The server's default isolation level, once the engine has connected (``None`` before)."""
    return getattr(engine.dialect, "default_isolation_level", None)
