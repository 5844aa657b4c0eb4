"""The outbox, audit records and outbound deliveries in SQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa

from forecourt.domain.events import ChangeEvent
from forecourt.errors import AlreadyExists, NotFound
from forecourt.store.base import AuditRecord, Delivery
from forecourt.store.sql.context import TxContext, dump, row_dict
from forecourt.store.sql.tables import audit_records, deliveries, outbox

_O = outbox.c
_AR = audit_records.c
_D = deliveries.c
DUE_STATUSES = ("pending", "retrying")


class SqlOutboxRepository:
    """:class:`~forecourt.store.base.OutboxRepository`: change events in commit order (``seq``)."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def append(self, event: ChangeEvent) -> None:
        """Append an event in this transaction; the database assigns its ``seq``."""
        await self._ctx.append_event(event)

    async def list_after(self, after_seq: int, limit: int, dealership_id: str | None = None) -> list[ChangeEvent]:
        """Up to ``limit`` events with ``seq > after_seq`` (of one dealership, or all), in ``seq`` order."""
        stmt = sa.select(outbox).where(_O.seq > after_seq).order_by(_O.seq).limit(limit)
        if dealership_id is not None:
            stmt = stmt.where(_O.dealership_id == dealership_id)
        return [ChangeEvent.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]

    async def seqs_between(self, after_seq: int, upto_seq: int) -> list[int]:
        """The ``seq`` of every event with ``after_seq < seq <= upto_seq``, in order (read from the primary key)."""
        stmt = sa.select(_O.seq).where(_O.seq > after_seq, _O.seq <= upto_seq).order_by(_O.seq)
        return [int(seq) for seq in (await self._ctx.conn.execute(stmt)).scalars()]

    async def last_seq(self) -> int:
        """The highest ``seq`` written so far (0 when the outbox is empty)."""
        value = (await self._ctx.conn.execute(sa.select(sa.func.max(_O.seq)))).scalar_one()
        return int(value or 0)


class SqlAuditRepository:
    """:class:`~forecourt.store.base.AuditRepository` over ``audit_records``."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def add_many(self, records: Sequence[AuditRecord]) -> None:
        """Store a batch of audit records in one round trip (records already stored are skipped).

        A record's fields are its row as they are (plain values; the arguments a JSON object), so the batch goes
        to the driver without a dump per record; arguments that are not plain JSON (a script's own values) take
        the model's JSON dump instead.
        """
        try:
            await self._ctx.insert_many_ignore(audit_records, [dict(r.__dict__) for r in records])
        except TypeError:  # raised while the batch's parameters are built, before anything is written
            await self._ctx.insert_many_ignore(audit_records, [dump(r, ("args_redacted",)) for r in records])

    async def page(
        self, company_id: str | None, since: datetime | None = None, limit: int = 1000, after_id: str | None = None
    ) -> list[AuditRecord]:
        """A company's records in (occurred_at, id) order, from ``since`` and after the record ``after_id``;
        ``company_id=None``: the platform's records (no company)."""
        owner = _AR.company_id.is_(None) if company_id is None else _AR.company_id == company_id
        where: list[sa.ColumnElement[bool]] = [owner]
        if since is not None:
            where.append(_AR.occurred_at >= since)
        if after_id is not None:
            anchor = sa.select(_AR.occurred_at).where(_AR.id == after_id).scalar_subquery()
            where.append(sa.or_(_AR.occurred_at > anchor, sa.and_(_AR.occurred_at == anchor, _AR.id > after_id)))
        stmt = sa.select(audit_records).where(*where).order_by(_AR.occurred_at, _AR.id).limit(limit)
        return [AuditRecord.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]

    async def purge_before(self, company_id: str, before: datetime) -> int:
        """Delete a company's records older than ``before``; returns how many."""
        stmt = sa.delete(audit_records).where(_AR.company_id == company_id, _AR.occurred_at < before)
        return int((await self._ctx.conn.execute(stmt)).rowcount)

    async def count(self, company_id: str | None = None) -> int:
        """How many records (of one company, or in all)."""
        stmt = sa.select(sa.func.count()).select_from(audit_records)
        if company_id is not None:
            stmt = stmt.where(_AR.company_id == company_id)
        return int((await self._ctx.conn.execute(stmt)).scalar_one())


class SqlDeliveryRepository:
    """:class:`~forecourt.store.base.DeliveryRepository` over ``deliveries``.

    A delivery is due when its status is ``pending`` or ``retrying`` and ``next_attempt_at`` has come.
    """

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def add(self, delivery: Delivery) -> None:
        """Store a new delivery; ``AlreadyExists`` if the id is taken."""
        if not await self._ctx.insert_ignore(deliveries, dump(delivery)):
            raise AlreadyExists()

    async def update(self, delivery: Delivery) -> None:
        """Replace a delivery's state; ``NotFound`` if there is none."""
        if not await self._ctx.update_where(deliveries, (_D.id == delivery.id,), dump(delivery)):
            raise NotFound()

    async def backlog(self) -> dict[str, int]:
        """How many deliveries are not delivered, by status (``pending``, ``retrying``, ``failed``)."""
        stmt = sa.select(_D.status, sa.func.count()).where(_D.status.in_((*DUE_STATUSES, "failed"))).group_by(_D.status)
        counts = {status: 0 for status in (*DUE_STATUSES, "failed")}
        for status, count in await self._ctx.conn.execute(stmt):
            counts[str(status)] = int(count)
        return counts

    async def due(self, now: datetime, limit: int) -> list[Delivery]:
        """Deliveries to attempt now, longest waiting first."""
        stmt = (
            sa.select(deliveries)
            .where(_D.status.in_(DUE_STATUSES), _D.next_attempt_at <= now)
            .order_by(_D.next_attempt_at, _D.id)
            .limit(limit)
        )
        if self._ctx.is_postgres:
            # Replicas polling at once each get their own batch instead of waiting on each other.
            stmt = stmt.with_for_update(skip_locked=True)
        return [Delivery.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]

    async def has_due(self, now: datetime) -> bool:
        """Whether any delivery is due at ``now``: one row of the status index, no lock taken."""
        stmt = sa.select(sa.literal(1)).where(_D.status.in_(DUE_STATUSES), _D.next_attempt_at <= now).limit(1)
        return (await self._ctx.conn.execute(stmt)).first() is not None

    async def list_for(self, subject_id: str) -> list[Delivery]:
        """Every delivery about one subject (e.g. a lead), oldest first."""
        stmt = sa.select(deliveries).where(_D.subject_id == subject_id).order_by(_D.created_at, _D.id)
        return [Delivery.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]
