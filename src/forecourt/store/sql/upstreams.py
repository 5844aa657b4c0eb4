"""Upstream server definitions per company, in the ``upstream_servers`` table."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from forecourt.domain.tool_pins import ToolPin
from forecourt.domain.upstreams import Registered, UpstreamSpec
from forecourt.store.sql.context import TxContext
from forecourt.store.sql.upstream_tables import upstream_servers, upstream_tool_pins


class SqlUpstreamRepository:
    """Upstream definitions of one unit of work (:class:`~forecourt.store.base.UpstreamRepository`)."""

    def __init__(self, ctx: TxContext) -> None:
        self.conn = ctx.conn

    @staticmethod
    def _row(row: sa.Row[tuple[object, ...]]) -> Registered:
        m = row._mapping
        return Registered(
            company_id=str(m["company_id"]),
            spec=UpstreamSpec.model_validate(m["definition"]),
            operator_managed=bool(m["operator_managed"]),
            updated_at=m["updated_at"],
        )

    async def list(self, company_id: str | None = None) -> list[Registered]:
        """Every registered upstream (of one company, or of all), by company and id."""
        stmt = sa.select(upstream_servers).order_by(upstream_servers.c.company_id, upstream_servers.c.id)
        if company_id is not None:
            stmt = stmt.where(upstream_servers.c.company_id == company_id)
        return [self._row(r) for r in await self.conn.execute(stmt)]

    async def get(self, company_id: str, upstream_id: str) -> Registered | None:
        """One upstream."""
        stmt = sa.select(upstream_servers).where(
            upstream_servers.c.company_id == company_id, upstream_servers.c.id == upstream_id
        )
        row = (await self.conn.execute(stmt)).first()
        return self._row(row) if row is not None else None

    async def upsert(self, company_id: str, spec: UpstreamSpec, *, operator: bool, now: datetime) -> bool:
        """Insert or replace an upstream; True when it was new."""
        existing = await self.get(company_id, spec.id)
        definition = spec.model_dump(mode="json")
        if existing is None:
            await self.conn.execute(
                sa.insert(upstream_servers).values(
                    company_id=company_id,
                    id=spec.id,
                    definition=definition,
                    operator_managed=operator,
                    created_at=now,
                    updated_at=now,
                )
            )
            return True
        await self.conn.execute(
            sa.update(upstream_servers)
            .where(upstream_servers.c.company_id == company_id, upstream_servers.c.id == spec.id)
            .values(definition=definition, operator_managed=operator, updated_at=now)
        )
        return False

    async def delete(self, company_id: str, upstream_id: str) -> bool:
        """Delete an upstream; False when it was not there."""
        result = await self.conn.execute(
            sa.delete(upstream_servers).where(
                upstream_servers.c.company_id == company_id, upstream_servers.c.id == upstream_id
            )
        )
        await self.conn.execute(
            sa.delete(upstream_tool_pins).where(
                upstream_tool_pins.c.company_id == company_id, upstream_tool_pins.c.upstream_id == upstream_id
            )
        )
        return bool(result.rowcount)

    async def pins(self, company_id: str, upstream_id: str) -> dict[str, ToolPin]:
        """The pinned tools of one upstream, by the upstream's own tool name."""
        t = upstream_tool_pins
        stmt = sa.select(t).where(t.c.company_id == company_id, t.c.upstream_id == upstream_id)
        found: dict[str, ToolPin] = {}
        for row in await self.conn.execute(stmt):
            m = row._mapping
            found[str(m["tool"])] = ToolPin(
                tool=str(m["tool"]),
                digest=m["digest"],
                definition=m["definition"],
                proposed_digest=m["proposed_digest"],
                proposed=m["proposed"],
                changed_at=m["changed_at"],
            )
        return found

    async def save_pins(self, company_id: str, upstream_id: str, pins: dict[str, ToolPin], *, now: datetime) -> None:
        """Replace the pinned tools of one upstream."""
        t = upstream_tool_pins
        await self.conn.execute(sa.delete(t).where(t.c.company_id == company_id, t.c.upstream_id == upstream_id))
        rows = [
            {
                "company_id": company_id,
                "upstream_id": upstream_id,
                "tool": name,
                "digest": pin.digest,
                "definition": pin.definition,
                "proposed_digest": pin.proposed_digest,
                "proposed": pin.proposed,
                "changed_at": pin.changed_at or now,
            }
            for name, pin in pins.items()
        ]
        if rows:
            await self.conn.execute(sa.insert(t), rows)
