"""Workflow definitions, runs and rotation counters in SQL (SQLite and PostgreSQL).

Runs are written with an optimistic revision check (``UPDATE ... WHERE revision = :read``): the writer
that lost the race is told so and never overwrites the winner's state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.exc import IntegrityError

from forecourt.domain.workflows import DefinitionRecord, RunRecord
from forecourt.errors import Conflict
from forecourt.store.sa_postgresql import postgresql
from forecourt.store.sql.context import TxContext
from forecourt.store.sql.workflow_tables import workflow_definitions, workflow_rotations, workflow_runs

_D = workflow_definitions.c
_R = workflow_runs.c


def _run(row: Any) -> RunRecord:
    m = row._mapping
    return RunRecord(
        id=m["id"],
        company_id=m["company_id"],
        dealership_id=m["dealership_id"],
        workflow_id=m["workflow_id"],
        version=m["version"],
        status=m["status"],
        state=m["state"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        revision=m["revision"],
        log=list(m["log"] or []),
        artifacts=dict(m["artifacts"] or {}),
        error=m["error"],
        started_by=m["started_by"],
        lease_owner=m["lease_owner"],
        lease_expires_at=m["lease_expires_at"],
    )


def _definition(row: Any) -> DefinitionRecord:
    m = row._mapping
    return DefinitionRecord(**{k: m[k] for k in DefinitionRecord.__dataclass_fields__})


class SqlWorkflowRepository:
    """The workflow tables of one unit of work (:class:`~forecourt.store.base.WorkflowRepository`)."""

    def __init__(self, ctx: TxContext) -> None:
        self._ctx = ctx

    # ------------------------------------------------------------------ definitions

    async def add_definition(
        self,
        *,
        company_id: str,
        workflow_id: str,
        process_id: str,
        name: str,
        digest: str,
        bpmn: str,
        created_by: str | None,
        now: datetime,
    ) -> DefinitionRecord:
        """Store a new version (1 + the latest); a concurrent upload of the same id gets ``Conflict``."""
        conn = self._ctx.conn
        latest = await conn.scalar(
            sa.select(sa.func.max(_D.version)).where(_D.company_id == company_id, _D.workflow_id == workflow_id)
        )
        record = DefinitionRecord(
            company_id=company_id,
            workflow_id=workflow_id,
            version=int(latest or 0) + 1,
            process_id=process_id,
            name=name,
            digest=digest,
            bpmn=bpmn,
            created_by=created_by,
            created_at=now,
        )
        try:
            await conn.execute(sa.insert(workflow_definitions).values(**record.__dict__))
        except IntegrityError:
            raise Conflict("Another version of this workflow was uploaded at the same time; retry.") from None
        return record

    async def get_definition(self, company_id: str, workflow_id: str, version: int | None) -> DefinitionRecord | None:
        """A company's definition: the given version, or the latest."""
        query = sa.select(workflow_definitions).where(_D.company_id == company_id, _D.workflow_id == workflow_id)
        query = query.where(_D.version == version) if version is not None else query.order_by(_D.version.desc())
        row = (await self._ctx.conn.execute(query.limit(1))).first()
        return _definition(row) if row is not None else None

    async def list_definitions(self, company_id: str) -> list[DefinitionRecord]:
        """Every stored version of the company's definitions, by id then version."""
        query = sa.select(workflow_definitions).where(_D.company_id == company_id).order_by(_D.workflow_id, _D.version)
        return [_definition(r) for r in (await self._ctx.conn.execute(query)).all()]

    # ------------------------------------------------------------------ runs

    async def insert_run(self, record: RunRecord) -> None:
        """Store a new run."""
        await self._ctx.conn.execute(sa.insert(workflow_runs).values(**record.row()))

    async def get_run(self, run_id: str) -> RunRecord | None:
        """A run by id."""
        row = (await self._ctx.conn.execute(sa.select(workflow_runs).where(_R.id == run_id))).first()
        return _run(row) if row is not None else None

    async def save_run(self, record: RunRecord) -> bool:
        """Write ``record`` as revision ``record.revision + 1`` if nobody wrote since it was read.

        Returns:
            Whether it was written (False: another writer advanced the run first). ``record`` is not changed.
        """
        read = record.revision
        values = record.row()
        values["revision"] = read + 1
        statement = sa.update(workflow_runs).where(_R.id == record.id, _R.revision == read).values(**values)
        result = await self._ctx.conn.execute(statement)
        return int(result.rowcount) == 1

    async def list_runs(self, dealership_id: str, *, status: str | None, limit: int) -> list[RunRecord]:
        """The dealership's runs, newest first."""
        query = sa.select(workflow_runs).where(_R.dealership_id == dealership_id)
        if status is not None:
            query = query.where(_R.status == status)
        query = query.order_by(_R.created_at.desc(), _R.id).limit(limit)
        return [_run(r) for r in (await self._ctx.conn.execute(query)).all()]

    async def resumable_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]:
        """``running`` runs whose lease has expired (their replica stopped mid-run)."""
        query = (
            sa.select(workflow_runs)
            .where(_R.status == "running", sa.or_(_R.lease_expires_at.is_(None), _R.lease_expires_at < now))
            .order_by(_R.updated_at)
            .limit(limit)
        )
        return [_run(r) for r in (await self._ctx.conn.execute(query)).all()]

    # ------------------------------------------------------------------ rotations

    async def next_in_rotation(self, dealership_id: str, pool: str) -> int:
        """Atomically advance the dealership's counter for ``pool``; the first call answers 1."""
        insert = postgresql.insert if self._ctx.is_postgres else sqlite.insert
        statement = (
            insert(workflow_rotations)
            .values(dealership_id=dealership_id, pool=pool, counter=1)
            .on_conflict_do_update(
                index_elements=["dealership_id", "pool"],
                set_={"counter": workflow_rotations.c.counter + 1},
            )
            .returning(workflow_rotations.c.counter)
        )
        value = await self._ctx.conn.scalar(statement)
        return int(value or 1)
