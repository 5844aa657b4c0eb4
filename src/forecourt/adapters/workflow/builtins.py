"""Operators a service task may name besides gateway actions.

- ``workflow.rotation.next`` ``{pool, members}``: the next member of a round-robin rotation, counted per
  dealership in the database (so every replica shares one rotation).
- ``service.get_appointment`` ``{appointment_id}`` and ``service.update_appointment`` ``{appointment_id,
  status}``: the catalogue has no appointment read or status action yet, so the runner provides them.
  They pass the same :func:`~forecourt.gateway.policy.decide` as a gateway call (member grants, scopes
  ``amcp:service:read|write``, tenancy, company policy). When the catalogue gains actions of these names,
  the runner calls those instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from zoneinfo import ZoneInfo

from forecourt.actions.base import Action, ExecutionContext
from forecourt.actions.dealer.representations import appointment_repr
from forecourt.adapters.workflow.repository import WorkflowRepository
from forecourt.domain.service import AppointmentStatus
from forecourt.errors import AppointmentNotFound, InvalidParams, TenancyDenied
from forecourt.gateway.policy import decide

Builtin = Callable[[dict[str, Any], ExecutionContext, str], Awaitable[Any]]
SETTABLE_STATUSES = frozenset({AppointmentStatus.CONFIRMED.value, AppointmentStatus.CANCELLED.value})


def _virtual(name: str, *, write: bool) -> Action:
    return Action(
        name=name,
        type="tool.run",
        title=name,
        description="Workflow built-in operator.",
        input_schema={"type": "object"},
        output_schema=None,
        adapter="workflow",
        scope="amcp:service:write" if write else "amcp:service:read",
        side_effect=write,
        domain="service",
    )


_GET_APPOINTMENT = _virtual("service.get_appointment", write=False)
_UPDATE_APPOINTMENT = _virtual("service.update_appointment", write=True)


async def _authorize(action: Action, params: Mapping[str, Any], ctx: ExecutionContext, dealership_id: str) -> Any:
    async with ctx.store.transaction() as uow:
        dealership = await uow.tenancy.get_dealership(dealership_id)
        policies = await uow.tenancy.list_policies(ctx.principal.company_id) if ctx.principal.company_id else []
    if dealership is None:
        raise TenancyDenied()
    decision = decide(action, ctx.principal, dealership=dealership, policies=policies, payload=params)
    if not decision.allowed:
        assert decision.error is not None
        raise decision.error
    return dealership


class Builtins:
    """The built-in operators, by name."""

    def __init__(self) -> None:
        self._ops: dict[str, Builtin] = {
            "workflow.rotation.next": self._rotation_next,
            _GET_APPOINTMENT.name: self._get_appointment,
            _UPDATE_APPOINTMENT.name: self._update_appointment,
        }

    def __contains__(self, name: str) -> bool:
        return name in self._ops

    async def run(self, name: str, params: dict[str, Any], ctx: ExecutionContext, dealership_id: str) -> Any:
        """Run the operator ``name`` for a run at ``dealership_id``."""
        return await self._ops[name](params, ctx, dealership_id)

    async def _rotation_next(self, params: dict[str, Any], ctx: ExecutionContext, dealership_id: str) -> Any:
        members = params.get("members")
        pool = str(params.get("pool") or "default")[:64]
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            raise InvalidParams("members must be a non-empty list of member ids.")
        position = await WorkflowRepository(ctx.store).next_in_rotation(dealership_id, pool)
        return {"pool": pool, "member": members[(position - 1) % len(members)], "position": position}

    async def _get_appointment(self, params: dict[str, Any], ctx: ExecutionContext, dealership_id: str) -> Any:
        dealership = await _authorize(_GET_APPOINTMENT, params, ctx, dealership_id)
        async with ctx.store.transaction() as uow:
            appt = await uow.service.get_appointment(dealership_id, str(params.get("appointment_id", "")))
        if appt is None:
            raise AppointmentNotFound()
        return appointment_repr(appt, ZoneInfo(dealership.timezone))

    async def _update_appointment(self, params: dict[str, Any], ctx: ExecutionContext, dealership_id: str) -> Any:
        status = str(params.get("status", ""))
        if status not in SETTABLE_STATUSES:
            raise InvalidParams(
                "status must be confirmed or cancelled.", details={"allowed": sorted(SETTABLE_STATUSES)}
            )
        dealership = await _authorize(_UPDATE_APPOINTMENT, params, ctx, dealership_id)
        async with ctx.store.transaction() as uow:
            appt = await uow.service.get_appointment(dealership_id, str(params.get("appointment_id", "")))
            if appt is None:
                raise AppointmentNotFound()
            if appt.status.value != status:
                appt = appt.model_copy(update={"status": AppointmentStatus(status), "updated_at": ctx.now})
                await uow.service.update_appointment(appt)
        return appointment_repr(appt, ZoneInfo(dealership.timezone))
