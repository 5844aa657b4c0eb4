"""Audit retention: records older than the company policy's ``audit_retention_days`` are purged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from forecourt.store.base import Store


async def purge_company(store: Store, company_id: str, *, now: datetime | None = None) -> int:
    """Delete the company's audit records past the shortest retention among its policies (default 365 days)."""
    async with store.transaction() as uow:
        policies = await uow.tenancy.list_policies(company_id)
        days = min((p.audit_retention_days for p in policies), default=365)
        cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
        return await uow.audit.purge_before(company_id, cutoff)


async def purge_all(store: Store, *, now: datetime | None = None) -> int:
    """Apply every company's retention policy."""
    async with store.transaction() as uow:
        companies = await uow.tenancy.list_companies()
    total = 0
    for company in companies:
        total += await purge_company(store, company.id, now=now)
    return total
