"""Persistence of workflow definitions, runs and rotation counters (SQLite and PostgreSQL).

Runs are written with an optimistic revision check (``UPDATE ... WHERE revision = :read``): the writer
that lost the race gets :class:`RunConflict` and never overwrites the winner's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from forecourt.adapters.workflow.errors import RunConflict
from forecourt.errors import Conflict
from forecourt.store.base import Store, UnitOfWork
from forecourt.store.sql.workflow_tables import workflow_definitions, workflow_rotations, workflow_runs

_D = workflow_definitions.c
_R = workflow_runs.c


def _conn(uow: UnitOfWork) -> AsyncConnection:
    # The workflow tables live beside the store's own; the SQL unit of work exposes its connection.
    conn = getattr(uow, "connection", None)
    if not isinstance(conn, AsyncConnection):
        raise TypeError("the workflow runner needs the SQL store")
    return conn


@dataclass(frozen=True)
class DefinitionRecord:
    """One stored version of a company's BPMN definition."""

    company_id: str
    workflow_id: str
    version: int
    process_id: str
    name: str
    digest: str
    bpmn: str
    created_by: str | None
    created_at: datetime


@dataclass
class RunRecord:
    """A workflow run as stored: engine state, status, log, artifacts and concurrency fields."""

    id: str
    company_id: str
    dealership_id: str
    workflow_id: str
    version: int
    status: str
    state: str
    created_at: datetime
    updated_at: datetime
    revision: int = 1
    log: list[dict[str, Any]] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    started_by: str | None = None
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None

    def row(self) -> dict[str, Any]:
        """The columns to write."""
        return {
            "id": self.id,
            "company_id": self.company_id,
            "dealership_id": self.dealership_id,
            "workflow_id": self.workflow_id,
            "version": self.version,
            "status": self.status,
            "revision": self.revision,
            "state": self.state,
            "log": self.log,
            "artifacts": self.artifacts,
            "error": self.error,
            "started_by": self.started_by,
            "lease_owner": self.lease_owner,
            "lease_expires_at": self.lease_expires_at,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


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


class WorkflowRepository:
    """Reads and writes the workflow tables through the store's transactions."""

    def __init__(self, store: Store) -> None:
        self.store = store

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
        try:
            async with self.store.transaction() as uow:
                conn = _conn(uow)
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
                await conn.execute(sa.insert(workflow_definitions).values(**record.__dict__))
        except IntegrityError:
            raise Conflict("Another version of this workflow was uploaded at the same time; retry.") from None
        return record

    async def get_definition(self, company_id: str, workflow_id: str, version: int | None) -> DefinitionRecord | None:
        """A company's definition: the given version, or the latest."""
        query = sa.select(workflow_definitions).where(_D.company_id == company_id, _D.workflow_id == workflow_id)
        query = query.where(_D.version == version) if version is not None else query.order_by(_D.version.desc())
        async with self.store.transaction() as uow:
            row = (await _conn(uow).execute(query.limit(1))).first()
        return _definition(row) if row is not None else None

    async def list_definitions(self, company_id: str) -> list[DefinitionRecord]:
        """Every stored version of the company's definitions, by id then version."""
        query = sa.select(workflow_definitions).where(_D.company_id == company_id).order_by(_D.workflow_id, _D.version)
        async with self.store.transaction() as uow:
            rows = (await _conn(uow).execute(query)).all()
        return [_definition(r) for r in rows]

    # ------------------------------------------------------------------ runs

    async def insert_run(self, record: RunRecord) -> None:
        """Store a new run."""
        async with self.store.transaction() as uow:
            await _conn(uow).execute(sa.insert(workflow_runs).values(**record.row()))

    async def get_run(self, run_id: str) -> RunRecord | None:
        """A run by id."""
        async with self.store.transaction() as uow:
            row = (await _conn(uow).execute(sa.select(workflow_runs).where(_R.id == run_id))).first()
        return _run(row) if row is not None else None

    async def save_run(self, record: RunRecord) -> None:
        """Write ``record`` if nobody wrote since it was read; bumps ``record.revision``.

        Raises:
            RunConflict: Another writer advanced the run first.
        """
        read = record.revision
        values = record.row()
        values["revision"] = read + 1
        statement = sa.update(workflow_runs).where(_R.id == record.id, _R.revision == read).values(**values)
        async with self.store.transaction() as uow:
            result = await _conn(uow).execute(statement)
        if cast(Any, result).rowcount != 1:
            raise RunConflict()
        record.revision = read + 1

    async def list_runs(self, dealership_id: str, *, status: str | None, limit: int) -> list[RunRecord]:
        """The dealership's runs, newest first."""
        query = sa.select(workflow_runs).where(_R.dealership_id == dealership_id)
        if status is not None:
            query = query.where(_R.status == status)
        query = query.order_by(_R.created_at.desc(), _R.id).limit(limit)
        async with self.store.transaction() as uow:
            rows = (await _conn(uow).execute(query)).all()
        return [_run(r) for r in rows]

    async def resumable_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]:
        """``running`` runs whose lease has expired (their replica stopped mid-run)."""
        query = (
            sa.select(workflow_runs)
            .where(_R.status == "running", sa.or_(_R.lease_expires_at.is_(None), _R.lease_expires_at < now))
            .order_by(_R.updated_at)
            .limit(limit)
        )
        async with self.store.transaction() as uow:
            rows = (await _conn(uow).execute(query)).all()
        return [_run(r) for r in rows]

    # ------------------------------------------------------------------ rotations

    async def next_in_rotation(self, dealership_id: str, pool: str) -> int:
        """Atomically advance the dealership's counter for ``pool``; the first call answers 1."""
        async with self.store.transaction() as uow:
            conn = _conn(uow)
            insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
            statement = (
                insert(workflow_rotations)
                .values(dealership_id=dealership_id, pool=pool, counter=1)
                .on_conflict_do_update(
                    index_elements=["dealership_id", "pool"],
                    set_={"counter": workflow_rotations.c.counter + 1},
                )
                .returning(workflow_rotations.c.counter)
            )
            value = await conn.scalar(statement)
        return int(value or 1)
