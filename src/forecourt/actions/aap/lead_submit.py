"""``aap.lead.submit``: the AAP skill as a thin translation over the one lead intake
(:mod:`forecourt.actions.lead_intake`).

What AAP asks beyond ``leads.create`` is explicit in :data:`AAP_RULES`: consent is required, its scope must be
exactly ``["lead_submission"]``, and the buyer's preferred channel must be one the consent allows.

A buyer agent learns nothing about other people from the answer: ``status: "duplicate"`` is said only when the
same source agent sent the earlier lead (it already knows); the dealer still sees every duplicate as one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from forecourt.actions.aap.translate import sales_phone
from forecourt.actions.base import ExecutionContext
from forecourt.actions.lead_intake import Intake, IntakeRules, LeadRequest, intake_lead
from forecourt.domain.people import Channel
from forecourt.domain.service import Appointment, AppointmentStatus
from forecourt.domain.tenancy import Dealership
from forecourt.domain.timeutil import rfc3339

AAP_RULES = IntakeRules(
    recorded_via="aap.lead.submit",
    source="aap",
    consent_required=True,
    exact_consent_scope=True,
    preferred_channel_consented=True,
)
_SHOWN = (AppointmentStatus.REQUESTED, AppointmentStatus.PROPOSED, AppointmentStatus.CONFIRMED)
_CHANNELS = {c.value for c in Channel}


def lead_request(request: Mapping[str, Any], idempotency_key: str | None) -> LeadRequest:
    """The AAP ``lead.submit.request`` payload as the intake's request."""
    contact: Mapping[str, Any] = request["customer"]
    address: Mapping[str, Any] = contact.get("address") or {}
    preferred = contact.get("preferred_contact")
    consent = dict(request["consent"])
    consent.setdefault("source_agent", request.get("source_agent"))
    return LeadRequest(
        first_name=str(contact["first_name"]),
        last_name=str(contact["last_name"]),
        email=contact.get("email"),
        phone=contact.get("phone"),
        postal_code=address.get("zip"),
        preferred_channel=Channel(preferred) if preferred in _CHANNELS else None,
        preferred_contact=preferred,
        address=address,
        interest=request.get("vehicle_of_interest") or {},
        trade_in=request.get("trade_in"),
        message=request.get("message"),
        source_agent=str(request["source_agent"]),
        submitted_at=request.get("submitted_at"),
        consent=consent,
        appointment=request.get("appointment"),
        idempotency_key=request.get("idempotency_key") or idempotency_key,
    )


def _appointment_block(appt: Appointment | None, proposals: list[tuple[datetime, datetime]]) -> dict[str, Any] | None:
    if appt is None or appt.status not in _SHOWN:
        return None
    block: dict[str, Any] = {"appointment_id": appt.id, "status": appt.status.value}
    if appt.status == AppointmentStatus.CONFIRMED:
        block["confirmed_window"] = {"start": rfc3339(appt.start), "end": rfc3339(appt.end)}
    elif appt.status == AppointmentStatus.PROPOSED:
        block["proposed_slots"] = [{"start": rfc3339(s), "end": rfc3339(e)} for s, e in proposals]
    return block


def response(intake: Intake, dealer: Dealership) -> dict[str, Any]:
    """The ``lead.submit.response`` payload."""
    duplicate = intake.repeat_of_own
    data: dict[str, Any] = {"lead_id": intake.lead.id, "status": "duplicate" if duplicate else "received"}
    block = _appointment_block(intake.appointment, intake.proposals)
    if block is not None:
        data["appointment"] = block
    contact: dict[str, Any] = {"name": dealer.name}
    phone = sales_phone(dealer)
    if phone:
        contact["phone"] = phone
    data["dealer"] = contact
    note = "Thank you: the dealership received this lead and will follow up on the consented channels."
    if duplicate:
        note = "The dealership already has a recent lead from you for this buyer and vehicle; this one was merged."
    if block is not None and block["status"] == AppointmentStatus.PROPOSED.value:
        note += " None of the requested times is free; please pick one of the proposed slots."
    return {"type": "lead.submit.response", "data": data, "message": note}


async def lead_submit(payload: Mapping[str, Any], dealer: Dealership, ctx: ExecutionContext) -> dict[str, Any]:
    """Accept (or replay) one AAP lead and answer the ``lead.submit.response`` payload."""
    async with ctx.store.transaction() as uow:
        intake = await intake_lead(
            lead_request(payload, ctx.idempotency_key),
            AAP_RULES,
            dealership_id=dealer.id,
            uow=uow,
            now=ctx.now,
            trace_id=ctx.trace_id,
            caller=ctx.principal.member_id,
        )
    return response(intake, intake.dealer)
