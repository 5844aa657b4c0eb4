"""Named query definitions per company, in the ``named_queries`` table."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from forecourt.adapters.named_queries.definition import NamedQuery
from forecourt.store.sql.knowledge_tables import named_queries


class NamedQueryRepository:
    """Named queries on one open connection (inside the caller's transaction)."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def get(self, company_id: str, query_id: str) -> NamedQuery | None:
        """The company's query with that id."""
        stmt = sa.select(named_queries.c.definition).where(
            named_queries.c.company_id == company_id, named_queries.c.id == query_id
        )
        row = (await self.conn.execute(stmt)).first()
        return NamedQuery.model_validate(row.definition) if row else None

    async def list(self, company_id: str) -> list[dict[str, Any]]:
        """The company's queries (id, description, definition, timestamps), by id."""
        stmt = sa.select(named_queries).where(named_queries.c.company_id == company_id).order_by(named_queries.c.id)
        return [dict(r._mapping) for r in await self.conn.execute(stmt)]

    async def upsert(self, company_id: str, query: NamedQuery, now: datetime) -> bool:
        """Insert or replace a query; True when it was new."""
        exists = await self.get(company_id, query.id) is not None
        values = {
            "company_id": company_id,
            "id": query.id,
            "description": query.description,
            "definition": query.model_dump(mode="json", by_alias=True, exclude_none=True),
            "created_at": now,
            "updated_at": now,
        }
        insert = postgresql.insert if self.conn.dialect.name == "postgresql" else sqlite.insert
        stmt = insert(named_queries).values(**values)
        stmt = stmt.on_conflict_do_update(
            index_elements=["company_id", "id"],
            set_={"description": stmt.excluded.description, "definition": stmt.excluded.definition, "updated_at": now},
        )
        await self.conn.execute(stmt)
        return not exists

    async def delete(self, company_id: str, query_id: str) -> bool:
        """Delete a query; False when it was not there."""
        result = await self.conn.execute(
            sa.delete(named_queries).where(named_queries.c.company_id == company_id, named_queries.c.id == query_id)
        )
        return bool(result.rowcount)
