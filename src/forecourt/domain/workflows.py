"""Workflow records as stored: a company's BPMN definition versions and the runs of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


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
