"""Reads and small writes the operator console's actions need that the repositories do not offer.

Approval records, filtered audit searches, delivery summaries and retries, inventory freshness. Like the
repositories, this is store code (it knows the tables); actions call it, surfaces never do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from forecourt.domain.approvals import Approval
from forecourt.store.base import AuditRecord, Delivery, Store, UnitOfWork
from forecourt.store.sql.console_tables import approvals
from forecourt.store.sql.tables import audit_records, deliveries, vehicles

_A = approvals.c
_AU = audit_records.c
_D = deliveries.c
_V = vehicles.c


def _conn(uow: UnitOfWork) -> Any:
    conn = getattr(uow, "connection", None)
    if conn is None:
        raise TypeError("the console queries need the SQL store")
    return conn


@dataclass(frozen=True)
class AuditFilter:
    """What the audit explorer narrows by; ``None`` means any."""

    company_ids: Sequence[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    member_id: str | None = None
    action: str | None = None
    surface: str | None = None
    result_class: str | None = None
    dealership_id: str | None = None
    trace_id: str | None = None
    record_id: str | None = None


def _audit_where(f: AuditFilter) -> list[Any]:
    where: list[Any] = []
    if f.company_ids is not None:
        where.append(_AU.company_id.in_(list(f.company_ids)))
    pairs = (
        (_AU.member_id, f.member_id),
        (_AU.surface, f.surface),
        (_AU.result_class, f.result_class),
        (_AU.dealership_id, f.dealership_id),
        (_AU.trace_id, f.trace_id),
        (_AU.id, f.record_id),
    )
    where.extend(col == value for col, value in pairs if value)
    if f.action:
        where.append(_AU.action.like(f.action.replace("*", "%")) if "*" in f.action else _AU.action == f.action)
    if f.since is not None:
        where.append(_AU.occurred_at >= f.since)
    if f.until is not None:
        where.append(_AU.occurred_at <= f.until)
    return where


async def audit_search(store: Store, f: AuditFilter, *, limit: int = 200) -> list[AuditRecord]:
    """Audit records matching ``f``, newest first."""
    stmt = sa.select(audit_records).where(*_audit_where(f)).order_by(_AU.occurred_at.desc(), _AU.id).limit(limit)
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).mappings().all()
    return [AuditRecord.model_validate(dict(r)) for r in rows]


async def delivery_counts(store: Store, dealership_ids: Sequence[str]) -> dict[str, int]:
    """Deliveries by status for these dealerships."""
    stmt = sa.select(_D.status, sa.func.count()).where(_D.dealership_id.in_(list(dealership_ids))).group_by(_D.status)
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).all()
    return {str(status): int(n) for status, n in rows}


async def recent_deliveries(store: Store, dealership_ids: Sequence[str], limit: int = 50) -> list[Delivery]:
    """The newest deliveries of these dealerships (failed and pending ones first)."""
    order = sa.case((_D.status == "failed", 0), (_D.status == "pending", 1), else_=2)
    stmt = (
        sa.select(deliveries)
        .where(_D.dealership_id.in_(list(dealership_ids)))
        .order_by(order, _D.created_at.desc())
        .limit(limit)
    )
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).mappings().all()
    return [Delivery.model_validate(dict(r)) for r in rows]


async def retry_delivery(store: Store, delivery_id: str, dealership_ids: Sequence[str], now: datetime) -> bool:
    """Make an undelivered delivery due now (again if it had given up); False when not found or delivered."""
    stmt = (
        sa.update(deliveries)
        .where(_D.id == delivery_id, _D.dealership_id.in_(list(dealership_ids)), _D.status != "delivered")
        .values(status="pending", next_attempt_at=now)
    )
    async with store.transaction() as uow:
        result = await _conn(uow).execute(stmt)
    return bool(result.rowcount)


async def inventory_freshness(store: Store, dealership_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per dealership: vehicles, available vehicles, newest ``last_verified_at`` and ``updated_at``."""
    available = sa.func.sum(sa.case((_V.status == "available", 1), else_=0))
    stmt = (
        sa.select(
            _V.dealership_id,
            sa.func.count(),
            available,
            sa.func.max(_V.last_verified_at),
            sa.func.min(_V.last_verified_at),
        )
        .where(_V.dealership_id.in_(list(dealership_ids)))
        .group_by(_V.dealership_id)
    )
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).all()
    out: dict[str, dict[str, Any]] = {}
    for dealership_id, total, avail, newest, oldest in rows:
        out[str(dealership_id)] = {
            "vehicles": int(total),
            "available": int(avail or 0),
            "newest_verified_at": _iso(newest),
            "oldest_verified_at": _iso(oldest),
        }
    return out


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else str(value)


# ---------------------------------------------------------------------------------------------- approvals


def _approval_row(a: Approval) -> dict[str, Any]:
    return a.model_dump()


async def add_approval(store: Store, approval: Approval) -> None:
    """Persist a new approval request."""
    async with store.transaction() as uow:
        await _conn(uow).execute(sa.insert(approvals).values(**_approval_row(approval)))


async def get_approval(store: Store, approval_id: str) -> Approval | None:
    """One approval record."""
    async with store.read() as uow:
        row = (await _conn(uow).execute(sa.select(approvals).where(_A.id == approval_id))).mappings().first()
    return Approval.model_validate(dict(row)) if row is not None else None


async def find_approval(
    store: Store, company_id: str, member_id: str | None, action: str, args_digest: str
) -> Approval | None:
    """The newest unused approval record of this exact call (pending, approved or rejected)."""
    stmt = (
        sa.select(approvals)
        .where(
            _A.company_id == company_id,
            _A.member_id == member_id if member_id else _A.member_id.is_(None),
            _A.action == action,
            _A.args_digest == args_digest,
            _A.status != "used",
        )
        .order_by(_A.requested_at.desc())
        .limit(1)
    )
    async with store.read() as uow:
        row = (await _conn(uow).execute(stmt)).mappings().first()
    return Approval.model_validate(dict(row)) if row is not None else None


async def list_approvals(
    store: Store, company_ids: Sequence[str] | None, status: str | None = None, limit: int = 100
) -> list[Approval]:
    """Approval records, newest first."""
    where: list[Any] = []
    if company_ids is not None:
        where.append(_A.company_id.in_(list(company_ids)))
    if status:
        where.append(_A.status == status)
    stmt = sa.select(approvals).where(*where).order_by(_A.requested_at.desc()).limit(limit)
    async with store.read() as uow:
        rows = (await _conn(uow).execute(stmt)).mappings().all()
    return [Approval.model_validate(dict(r)) for r in rows]


async def set_approval_status(
    store: Store,
    approval_id: str,
    *,
    expect: str,
    status: str,
    at: datetime,
    by: str | None = None,
    comment: str | None = None,
) -> bool:
    """Move an approval from ``expect`` to ``status`` (atomically: only one caller wins)."""
    values: dict[str, Any] = {"status": status}
    if by is not None:
        values.update(decided_at=at, decided_by=by, comment=comment or "")
    if status == "rejected":
        values["held"] = None  # a rejected call never runs: its input is not kept
    stmt = sa.update(approvals).where(_A.id == approval_id, _A.status == expect).values(**values)
    async with store.transaction() as uow:
        result = await _conn(uow).execute(stmt)
    return bool(result.rowcount)


async def finish_approval(store: Store, approval_id: str, result: dict[str, Any], at: datetime) -> None:
    """Keep a held call's answer once it ran on approval; the record is used and its held input erased."""
    stmt = (
        sa.update(approvals)
        .where(_A.id == approval_id, _A.status.in_(("approved", "used")))
        .values(status="used", held=None, result=result, ran_at=at)
    )
    async with store.transaction() as uow:
        await _conn(uow).execute(stmt)


class SqlApprovals:
    """Approval records on a store (the gateway's ``ApprovalBook``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def find(self, company_id: str, member_id: str | None, action: str, args_digest: str) -> Approval | None:
        """The newest unused record of this exact call."""
        return await find_approval(self.store, company_id, member_id, action, args_digest)

    async def add(self, approval: Approval) -> None:
        """Store a new pending record."""
        await add_approval(self.store, approval)

    async def get(self, approval_id: str) -> Approval | None:
        """One record."""
        return await get_approval(self.store, approval_id)

    async def finish(self, approval_id: str, result: dict[str, Any], at: datetime) -> None:
        """Keep the held call's answer (``finish_approval``)."""
        await finish_approval(self.store, approval_id, result, at)

    async def move(self, approval_id: str, *, expect: str, status: str, at: datetime) -> bool:
        """Move a record from ``expect`` to ``status`` (atomically)."""
        return await set_approval_status(self.store, approval_id, expect=expect, status=status, at=at)
