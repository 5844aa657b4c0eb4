"""The workflow runner's view of its records: one store transaction per call, over ``uow.workflows``.

Runs are written with an optimistic revision check: the writer that lost the race gets
:class:`RunConflict` and never overwrites the winner's state.
"""

from __future__ import annotations

from datetime import datetime

from forecourt.adapters.workflow.errors import RunConflict
from forecourt.domain.workflows import DefinitionRecord, RunRecord
from forecourt.store.base import Store

__all__ = ["DefinitionRecord", "RunRecord", "WorkflowRepository"]


class WorkflowRepository:
    """Reads and writes workflow definitions, runs and rotations, each in its own store transaction."""

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
        async with self.store.transaction() as uow:
            return await uow.workflows.add_definition(
                company_id=company_id,
                workflow_id=workflow_id,
                process_id=process_id,
                name=name,
                digest=digest,
                bpmn=bpmn,
                created_by=created_by,
                now=now,
            )

    async def get_definition(self, company_id: str, workflow_id: str, version: int | None) -> DefinitionRecord | None:
        """A company's definition: the given version, or the latest."""
        async with self.store.transaction() as uow:
            return await uow.workflows.get_definition(company_id, workflow_id, version)

    async def list_definitions(self, company_id: str) -> list[DefinitionRecord]:
        """Every stored version of the company's definitions, by id then version."""
        async with self.store.transaction() as uow:
            return await uow.workflows.list_definitions(company_id)

    # ------------------------------------------------------------------ runs

    async def insert_run(self, record: RunRecord) -> None:
        """Store a new run."""
        async with self.store.transaction() as uow:
            await uow.workflows.insert_run(record)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """A run by id."""
        async with self.store.transaction() as uow:
            return await uow.workflows.get_run(run_id)

    async def save_run(self, record: RunRecord) -> None:
        """Write ``record`` if nobody wrote since it was read; bumps ``record.revision``.

        Raises:
            RunConflict: Another writer advanced the run first.
        """
        async with self.store.transaction() as uow:
            written = await uow.workflows.save_run(record)
        if not written:
            raise RunConflict()
        record.revision += 1

    async def list_runs(self, dealership_id: str, *, status: str | None, limit: int) -> list[RunRecord]:
        """The dealership's runs, newest first."""
        async with self.store.transaction() as uow:
            return await uow.workflows.list_runs(dealership_id, status=status, limit=limit)

    async def resumable_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]:
        """``running`` runs whose lease has expired (their replica stopped mid-run)."""
        async with self.store.transaction() as uow:
            return await uow.workflows.resumable_runs(now, limit)

    # ------------------------------------------------------------------ rotations

    async def next_in_rotation(self, dealership_id: str, pool: str) -> int:
        """Atomically advance the dealership's counter for ``pool``; the first call answers 1."""
        async with self.store.transaction() as uow:
            return await uow.workflows.next_in_rotation(dealership_id, pool)
