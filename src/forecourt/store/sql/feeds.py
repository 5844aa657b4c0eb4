"""Scheduled feed sources (claimed by one replica at a time through a lease row) and CRM mail routes in SQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from forecourt.domain.feeds import CrmMailRoute, FeedSource
from forecourt.store.sql.context import TxContext, row_dict
from forecourt.store.sql.feed_tables import crm_mail_routes, feed_sources

_F = feed_sources.c


class SqlFeedSourceRepository:
    """:class:`~forecourt.store.base.FeedSourceRepository` over ``feed_sources``."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def upsert(self, source: FeedSource) -> None:
        """Create or replace a dealership's feed source (its lease and last report included)."""
        await self._ctx.upsert(feed_sources, source.model_dump(), ("dealership_id",))

    async def get(self, dealership_id: str) -> FeedSource | None:
        """The dealership's feed source."""
        row = (await self._ctx.conn.execute(sa.select(feed_sources).where(_F.dealership_id == dealership_id))).first()
        return FeedSource.model_validate(row_dict(row)) if row else None

    async def list_all(self, dealership_ids: Sequence[str] | None = None) -> list[FeedSource]:
        """Every feed source (of these dealerships), by dealership id."""
        stmt = sa.select(feed_sources).order_by(_F.dealership_id)
        if dealership_ids is not None:
            stmt = stmt.where(_F.dealership_id.in_(dealership_ids))
        return [FeedSource.model_validate(row_dict(r)) for r in await self._ctx.conn.execute(stmt)]

    async def delete(self, dealership_id: str) -> bool:
        """Forget the dealership's feed source; True when there was one."""
        result = await self._ctx.conn.execute(sa.delete(feed_sources).where(_F.dealership_id == dealership_id))
        return bool(result.rowcount)

    async def due(self, now: datetime, limit: int) -> list[str]:
        """Dealerships whose enabled feed is due and not leased to a live replica, oldest first."""
        stmt = (
            sa.select(_F.dealership_id)
            .where(_F.enabled.is_(True), _F.next_run_at <= now, sa.or_(_F.lease_until.is_(None), _F.lease_until < now))
            .order_by(_F.next_run_at)
            .limit(limit)
        )
        return [str(d) for d in (await self._ctx.conn.execute(stmt)).scalars()]

    async def claim(
        self, dealership_id: str, owner: str, now: datetime, lease: timedelta, *, force: bool = False
    ) -> bool:
        """Lease the feed to ``owner`` until ``now + lease`` if it is due (or ``force``) and not leased.

        One conditional ``UPDATE``: of replicas claiming at once, exactly one sees a changed row (PostgreSQL
        re-checks the condition after the first commits; SQLite has one writer at a time).
        """
        where: list[Any] = [_F.dealership_id == dealership_id, sa.or_(_F.lease_until.is_(None), _F.lease_until < now)]
        if not force:
            where += [_F.enabled.is_(True), _F.next_run_at <= now]
        stmt = sa.update(feed_sources).where(*where).values(lease_owner=owner, lease_until=now + lease)
        return bool((await self._ctx.conn.execute(stmt)).rowcount)

    async def finish(
        self,
        dealership_id: str,
        owner: str,
        *,
        status: str,
        report: dict[str, Any],
        at: datetime,
        next_run_at: datetime,
    ) -> bool:
        """Record a run's outcome and release the lease, if ``owner`` still holds it; True when recorded."""
        stmt = (
            sa.update(feed_sources)
            .where(_F.dealership_id == dealership_id, _F.lease_owner == owner)
            .values(
                lease_owner=None,
                lease_until=None,
                last_run_at=at,
                last_status=status,
                last_report=report,
                next_run_at=next_run_at,
            )
        )
        return bool((await self._ctx.conn.execute(stmt)).rowcount)


class SqlCrmMailRepository:
    """:class:`~forecourt.store.base.CrmMailRepository` over ``crm_mail_routes``."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    async def upsert(self, route: CrmMailRoute, at: datetime) -> None:
        """Create or replace the dealership's route (the password is a reference, never a secret)."""
        config = route.model_dump(mode="json", exclude={"dealership_id", "updated_at"})
        values = {"dealership_id": route.dealership_id, "config": config, "updated_at": at}
        await self._ctx.upsert(crm_mail_routes, values, ("dealership_id",))

    async def get(self, dealership_id: str) -> CrmMailRoute | None:
        """The dealership's route."""
        stmt = sa.select(crm_mail_routes).where(crm_mail_routes.c.dealership_id == dealership_id)
        row = (await self._ctx.conn.execute(stmt)).first()
        if row is None:
            return None
        return CrmMailRoute.model_validate({**row.config, "dealership_id": row.dealership_id,
                                            "updated_at": row.updated_at})  # fmt: skip

    async def delete(self, dealership_id: str) -> bool:
        """Forget the dealership's route; True when there was one."""
        stmt = sa.delete(crm_mail_routes).where(crm_mail_routes.c.dealership_id == dealership_id)
        return bool((await self._ctx.conn.execute(stmt)).rowcount)
