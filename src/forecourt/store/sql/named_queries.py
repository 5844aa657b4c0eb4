"""Named query definitions per company (the ``named_queries`` table), and running them over the dealer tables."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from forecourt.domain.named_queries import NamedQuery, QueryRows
from forecourt.store.sa_postgresql import postgresql
from forecourt.store.sql.context import TxContext
from forecourt.store.sql.knowledge_tables import named_queries
from forecourt.store.sql.query_compiler import compile_query


class SqlNamedQueryRepository:
    """Named queries of one unit of work (:class:`~forecourt.store.base.NamedQueryRepository`)."""

    def __init__(self, ctx: TxContext) -> None:
        self.conn = ctx.conn
        self.is_postgres = ctx.is_postgres

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
        insert = postgresql.insert if self.is_postgres else sqlite.insert
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

    def check(self, query: NamedQuery, params: Mapping[str, Any], *, now: datetime) -> None:
        """Compile ``query`` with ``params`` without running it, so that a broken definition is refused early.

        Raises:
            InvalidQueryParams: Unknown, missing or mistyped parameters.
            InvalidQuery: The definition does not compile.
        """
        compile_query(query, dict(params), dealership_id="-", now=now, timezone="UTC", postgres=self.is_postgres)

    async def run(
        self, query: NamedQuery, params: Mapping[str, Any], *, dealership_id: str, now: datetime, timezone: str
    ) -> QueryRows:
        """Run ``query`` with the caller's ``params``, scoped to ``dealership_id``.

        At most ``limit + 1`` rows come back, so the caller can tell that the answer was cut.

        Raises:
            InvalidQueryParams: Unknown, missing or mistyped parameters.
            InvalidQuery: The definition does not compile.
        """
        compiled = compile_query(
            query, dict(params), dealership_id=dealership_id, now=now, timezone=timezone, postgres=self.is_postgres
        )
        rows = (await self.conn.execute(compiled.statement)).all()
        return QueryRows(
            columns=compiled.columns,
            rows=[dict(r._mapping) for r in rows],
            params=compiled.params,
            window=compiled.window,
            limit=compiled.limit,
            kinds=compiled.kinds,
        )
