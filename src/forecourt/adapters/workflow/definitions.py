"""Where a run's BPMN comes from: the company's uploaded versions, else the definitions shipped with Forecourt.

Shipped definitions are package data (``forecourt/workflows/definitions/*.bpmn``), available to every
company as version ``0``; a company that uploads a definition with the same id overrides it from its
version 1 on.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from forecourt import caching
from forecourt.adapters.workflow.errors import DefinitionNotFound
from forecourt.adapters.workflow.repository import WorkflowRepository

SHIPPED_PACKAGE = "forecourt.workflows.definitions"
SHIPPED_VERSION = 0


@caching.once
def shipped() -> dict[str, str]:
    """Shipped definitions: workflow id (the file name without ``.bpmn``) → BPMN XML."""
    found: dict[str, str] = {}
    for entry in resources.files(SHIPPED_PACKAGE).iterdir():
        if entry.name.endswith(".bpmn"):
            found[entry.name.removesuffix(".bpmn")] = entry.read_text(encoding="utf-8")
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class ResolvedDefinition:
    """The BPMN a run starts from."""

    workflow_id: str
    version: int
    bpmn: str
    source: str


async def resolve(
    repository: WorkflowRepository, company_id: str, workflow_id: str, version: int | None
) -> ResolvedDefinition:
    """The company's version (latest when ``version`` is None), else the shipped default.

    Raises:
        DefinitionNotFound: Neither the company nor Forecourt has that definition (or version).
    """
    if version != SHIPPED_VERSION:
        record = await repository.get_definition(company_id, workflow_id, version)
        if record is not None:
            return ResolvedDefinition(workflow_id, record.version, record.bpmn, "company")
    if version in (None, SHIPPED_VERSION) and workflow_id in shipped():
        return ResolvedDefinition(workflow_id, SHIPPED_VERSION, shipped()[workflow_id], "shipped")
    raise DefinitionNotFound(details={"workflow_id": workflow_id[:64]})
