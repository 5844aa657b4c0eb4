"""Customers, consent grants and leads in SQL; changes write change events to the outbox.

Event payloads carry ids and statuses only, never a customer's contact details.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from forecourt.domain.events import ChangeType, ResourceType
from forecourt.domain.people import ConsentGrant, Customer, Lead
from forecourt.domain.timeutil import utcnow
from forecourt.errors import AlreadyExists, ConsentNotFound, CustomerNotFound, LeadNotFound
from forecourt.store.sql.context import TxContext, dump, row_dict
from forecourt.store.sql.tables import consent_grants, customers, leads

_C = customers.c
_G = consent_grants.c
_L = leads.c
_CONSENT_JSON = ("scope", "allowed_channels", "evidence")
_LEAD_JSON = ("vehicle_of_interest", "trade_in")


async def _page(
    ctx: TxContext, table: sa.Table, where: list[sa.ColumnElement[bool]], order: list[Any], *, offset: int, limit: int
) -> tuple[list[sa.Row[Any]], int]:
    rows = list(await ctx.conn.execute(sa.select(table).where(*where).order_by(*order).offset(offset).limit(limit)))
    total = int((await ctx.conn.execute(sa.select(sa.func.count()).select_from(table).where(*where))).scalar_one())
    return rows, total


def _customer_row(customer: Customer) -> dict[str, Any]:
    row = dump(customer)
    row["email_l"] = customer.email.strip().lower() if customer.email else None
    return row


def _customer(row: sa.Row[Any]) -> Customer:
    return Customer.model_validate(row_dict(row, exclude=("email_l",)))


class SqlCustomerRepository:
    """:class:`~forecourt.store.base.CustomerRepository` over the ``customers`` table."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def add(self, customer: Customer) -> None:
        """Store a new customer; ``AlreadyExists`` if the id is taken."""
        await self._ctx.lock_outbox()
        if not await self._ctx.insert_ignore(customers, _customer_row(customer)):
            raise AlreadyExists()
        await self._emit(customer, ChangeType.CREATED, customer.created_at)

    async def update(self, customer: Customer) -> None:
        """Replace a stored customer; ``CustomerNotFound`` if there is none."""
        await self._ctx.lock_outbox()
        row = _customer_row(customer)
        where = (_C.id == customer.id, _C.dealership_id == customer.dealership_id)
        if not await self._ctx.update_where(customers, where, row):
            raise CustomerNotFound()
        await self._emit(customer, ChangeType.UPDATED, customer.updated_at)

    async def _emit(self, customer: Customer, change: ChangeType, at: datetime) -> None:
        await self._ctx.emit(customer.dealership_id, ResourceType.CUSTOMER, customer.id, change, at)

    async def get(self, dealership_id: str, customer_id: str) -> Customer | None:
        """A customer by id."""
        stmt = sa.select(customers).where(_C.dealership_id == dealership_id, _C.id == customer_id)
        row = (await self._ctx.conn.execute(stmt)).first()
        return _customer(row) if row else None

    async def find_by_contact(self, dealership_id: str, email: str | None, phone: str | None) -> Customer | None:
        """The oldest customer with that email (case-insensitive), else with that exact phone number."""
        for column, value in ((_C.email_l, email.strip().lower() if email else None), (_C.phone, phone)):
            if not value:
                continue
            stmt = (
                sa.select(customers)
                .where(_C.dealership_id == dealership_id, column == value)
                .order_by(_C.created_at, _C.id)
                .limit(1)
            )
            row = (await self._ctx.conn.execute(stmt)).first()
            if row:
                return _customer(row)
        return None

    async def sharing_contact(
        self, dealership_id: str, email: str | None, phone: str | None, limit: int = 20
    ) -> list[Customer]:
        """Customers with that e-mail (case-insensitive) or that exact phone number, oldest first."""
        match = [c == v for c, v in ((_C.email_l, email.strip().lower() if email else None), (_C.phone, phone)) if v]
        if not match:
            return []
        stmt = (
            sa.select(customers)
            .where(_C.dealership_id == dealership_id, sa.or_(*match))
            .order_by(_C.created_at, _C.id)
            .limit(limit)
        )
        return [_customer(row) for row in await self._ctx.conn.execute(stmt)]

    async def page(self, dealership_id: str, offset: int, limit: int) -> tuple[list[Customer], int]:
        """A page of a dealership's customers, oldest first, and how many there are."""
        order = [_C.created_at, _C.id]
        where = [_C.dealership_id == dealership_id]
        rows, total = await _page(self._ctx, customers, where, order, offset=offset, limit=limit)
        return [_customer(r) for r in rows], total


class SqlConsentRepository:
    """:class:`~forecourt.store.base.ConsentRepository` over ``consent_grants``; grants are never deleted."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def add(self, grant: ConsentGrant) -> None:
        """Store a new grant exactly as given; ``AlreadyExists`` if the id is taken."""
        await self._ctx.lock_outbox()
        if not await self._ctx.insert_ignore(consent_grants, dump(grant, _CONSENT_JSON)):
            raise AlreadyExists()
        await self._emit(grant, ChangeType.CREATED, grant.created_at)

    async def update(self, grant: ConsentGrant) -> None:
        """Replace a grant (e.g. revoked or expired); ``ConsentNotFound`` if there is none."""
        await self._ctx.lock_outbox()
        where = (_G.id == grant.id, _G.dealership_id == grant.dealership_id)
        if not await self._ctx.update_where(consent_grants, where, dump(grant, _CONSENT_JSON)):
            raise ConsentNotFound()
        await self._emit(grant, ChangeType.UPDATED, utcnow())

    async def _emit(self, grant: ConsentGrant, change: ChangeType, at: datetime) -> None:
        status = grant.status.value
        await self._ctx.emit(grant.dealership_id, ResourceType.CONSENT, grant.id, change, at, status=status)

    async def get(self, dealership_id: str, consent_id: str) -> ConsentGrant | None:
        """A grant by id."""
        stmt = sa.select(consent_grants).where(_G.dealership_id == dealership_id, _G.id == consent_id)
        row = (await self._ctx.conn.execute(stmt)).first()
        return ConsentGrant.model_validate(row_dict(row)) if row else None

    async def page(
        self, dealership_id: str, offset: int, limit: int, customer_id: str | None = None
    ) -> tuple[list[ConsentGrant], int]:
        """A page of a dealership's grants (optionally one customer's), oldest first, and the total."""
        where = [_G.dealership_id == dealership_id]
        if customer_id is not None:
            where.append(_G.customer_id == customer_id)
        rows, total = await _page(self._ctx, consent_grants, where, [_G.created_at, _G.id], offset=offset, limit=limit)
        return [ConsentGrant.model_validate(row_dict(r)) for r in rows], total


class SqlLeadRepository:
    """:class:`~forecourt.store.base.LeadRepository` over the ``leads`` table."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def add(self, lead: Lead) -> None:
        """Store a new lead; ``AlreadyExists`` if the id is taken."""
        await self._ctx.lock_outbox()
        if not await self._ctx.insert_ignore(leads, dump(lead, _LEAD_JSON)):
            raise AlreadyExists()
        await self._emit(lead, ChangeType.CREATED, lead.created_at)

    async def update(self, lead: Lead) -> None:
        """Replace a stored lead; ``LeadNotFound`` if there is none."""
        await self._ctx.lock_outbox()
        where = (_L.id == lead.id, _L.dealership_id == lead.dealership_id)
        if not await self._ctx.update_where(leads, where, dump(lead, _LEAD_JSON)):
            raise LeadNotFound()
        await self._emit(lead, ChangeType.UPDATED, lead.updated_at)

    async def _emit(self, lead: Lead, change: ChangeType, at: datetime) -> None:
        status = lead.status.value
        await self._ctx.emit(lead.dealership_id, ResourceType.LEAD, lead.id, change, at, status=status)

    async def get(self, dealership_id: str, lead_id: str) -> Lead | None:
        """A lead by id."""
        stmt = sa.select(leads).where(_L.dealership_id == dealership_id, _L.id == lead_id)
        row = (await self._ctx.conn.execute(stmt)).first()
        return Lead.model_validate(row_dict(row)) if row else None

    async def page(
        self, dealership_id: str, offset: int, limit: int, status: str | None = None
    ) -> tuple[list[Lead], int]:
        """A page of a dealership's leads (optionally of one status), newest first, and the total."""
        where = [_L.dealership_id == dealership_id]
        if status is not None:
            where.append(_L.status == status)
        order = [_L.created_at.desc(), _L.id.desc()]
        rows, total = await _page(self._ctx, leads, where, order, offset=offset, limit=limit)
        return [Lead.model_validate(row_dict(r)) for r in rows], total

    async def _first(self, *where: sa.ColumnElement[bool]) -> Lead | None:
        # The original lead wins over leads already marked as its duplicates, then the oldest.
        is_duplicate = sa.case((_L.duplicate_of.is_(None), 0), else_=1)
        stmt = sa.select(leads).where(*where).order_by(is_duplicate, _L.created_at, _L.id).limit(1)
        row = (await self._ctx.conn.execute(stmt)).first()
        return Lead.model_validate(row_dict(row)) if row else None

    async def find_by_fingerprint(self, dealership_id: str, fingerprint: str, since: datetime) -> Lead | None:
        """The original lead with this fingerprint created at or after ``since``."""
        return await self._first(
            _L.dealership_id == dealership_id, _L.fingerprint == fingerprint, _L.created_at >= since
        )

    async def find_by_idempotency_key(self, dealership_id: str, key: str, since: datetime) -> Lead | None:
        """The lead submitted with this idempotency key at or after ``since``."""
        return await self._first(_L.dealership_id == dealership_id, _L.idempotency_key == key, _L.created_at >= since)
