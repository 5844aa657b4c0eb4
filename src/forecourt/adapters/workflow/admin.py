"""Runs the admin actions for BPMN definitions: ``admin.workflows.upload`` and ``admin.workflows.list``.

Like the other admin actions they run through the gateway, and only the company's administrators (or
the operator through the CLI) may call them. An upload is parsed and validated before it is stored
(well-formed XML without DTDs, the BPMN 2.0 schema, an executable process, every script and expression
inside the sandbox); each upload of an id becomes its next version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.adapters.workflow import engine
from forecourt.adapters.workflow.definitions import SHIPPED_VERSION, shipped
from forecourt.adapters.workflow.repository import DefinitionRecord, WorkflowRepository
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.errors import Forbidden

ADAPTER_ID = "workflow-admin"


def _record_view(record: DefinitionRecord) -> dict[str, Any]:
    return {
        "workflow_id": record.workflow_id,
        "version": record.version,
        "process_id": record.process_id,
        "name": record.name,
        "digest": record.digest,
        "source": "company",
        "created_by": record.created_by,
        "created_at": record.created_at.isoformat(),
    }


class WorkflowAdminAdapter:
    """Runs the workflow admin actions."""

    id = ADAPTER_ID

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Check the caller administers the company, then upload or list."""
        company_id = str(payload["company_id"])
        principal = context.principal
        if principal.method != "internal":
            member = principal.member
            if member is None or not member.is_admin or principal.company_id != company_id:
                raise Forbidden("Only the company's administrators may do this.")
        repository = WorkflowRepository(context.store)
        if context.action.name == "admin.workflows.upload":
            output = await self._upload(payload, context, repository, company_id)
        else:
            output = await self._list(repository, company_id)
        return AdapterResult(output=output, result_type="admin.result")

    async def _upload(
        self, payload: Mapping[str, Any], ctx: ExecutionContext, repository: WorkflowRepository, company_id: str
    ) -> dict[str, Any]:
        bpmn = str(payload["bpmn"])
        parsed = engine.parse_definition(bpmn)  # raises workflow.invalid_definition (422)
        record = await repository.add_definition(
            company_id=company_id,
            workflow_id=str(payload["workflow_id"]),
            process_id=parsed.process_id,
            name=parsed.name,
            digest=parsed.digest,
            bpmn=bpmn,
            created_by=ctx.principal.member_id or ctx.principal.subject,
            now=ctx.now,
        )
        return _record_view(record)

    async def _list(self, repository: WorkflowRepository, company_id: str) -> dict[str, Any]:
        latest: dict[str, dict[str, Any]] = {}
        for record in await repository.list_definitions(company_id):
            view = latest.setdefault(record.workflow_id, {"versions": []})
            view.update(_record_view(record))
            view["versions"].append(record.version)
        for workflow_id, xml in shipped().items():
            if workflow_id not in latest:
                parsed = engine.parse_definition(xml)
                latest[workflow_id] = {
                    "workflow_id": workflow_id,
                    "version": SHIPPED_VERSION,
                    "process_id": parsed.process_id,
                    "name": parsed.name,
                    "digest": parsed.digest,
                    "source": "shipped",
                    "versions": [SHIPPED_VERSION],
                }
        return {"items": [latest[k] for k in sorted(latest)]}
