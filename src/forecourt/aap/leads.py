"""``lead.submit``: consent rules, duplicates, idempotent replay, appointments, and the ADF delivery.

Everything a lead produces is written in one transaction: the customer, the lead, the ConsentGrant
(kept verbatim as the audit record of what the user agreed to), the appointment, and the ADF
delivery row for the dealership's CRM (the delivery worker posts it with retries). So a lead is
never accepted without its delivery being queued, and a CRM that is down loses nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from forecourt.aap import appointments
from forecourt.aap.adf import render_adf
from forecourt.aap.translate import sales_phone
from forecourt.actions.base import ExecutionContext
from forecourt.actions.dealer.common import new_id
from forecourt.actions.dealer.lead_rules import lead_fingerprint, normalise_email, normalise_phone, vehicle_key
from forecourt.actions.dealer.leads import _upsert_customer
from forecourt.domain.people import Channel, ConsentGrant, Lead, LeadStatus
from forecourt.domain.service import Appointment, AppointmentKind, AppointmentStatus
from forecourt.domain.tenancy import Dealership
from forecourt.domain.timeutil import parse_rfc3339, rfc3339
from forecourt.domain.vehicle import Vehicle, VehicleStatus
from forecourt.errors import ConsentRequired, IdempotencyConflict, InvalidConsent, VehicleUnavailable
from forecourt.store.base import Delivery, UnitOfWork

logger = logging.getLogger(__name__)

DEDUPE_WINDOW = timedelta(hours=24)
CLOCK_SKEW = timedelta(minutes=5)
ADF_CONTENT_TYPE = "application/xml"
CRM_KIND = "crm_adf"
_STATUS = {LeadStatus.NEW: "received", LeadStatus.DUPLICATE: "duplicate"}
_SHOWN = (AppointmentStatus.REQUESTED, AppointmentStatus.PROPOSED, AppointmentStatus.CONFIRMED)


def check_consent(request: Mapping[str, Any], now: datetime) -> None:
    """AAP consent rules beyond the schema: exact scope, not expired, not future-dated, channel allowed."""
    consent: Mapping[str, Any] = request["consent"]
    if list(consent.get("scope") or []) != ["lead_submission"]:
        raise InvalidConsent('consent.scope must be exactly ["lead_submission"].', details={"field": "consent.scope"})
    if consent.get("expires_at") and parse_rfc3339(str(consent["expires_at"])) <= now:
        raise InvalidConsent("The consent grant has expired.", details={"field": "consent.expires_at"})
    if parse_rfc3339(str(consent["granted_at"])) > now + CLOCK_SKEW:
        raise InvalidConsent("The consent grant is dated in the future.", details={"field": "consent.granted_at"})
    preferred = request["customer"].get("preferred_contact")
    allowed = set(consent.get("allowed_channels") or ())
    if preferred and preferred != "any" and preferred not in allowed:
        raise ConsentRequired(
            "The preferred follow-up channel is not among consent.allowed_channels.",
            details={"field": "customer.preferred_contact", "channel": preferred, "allowed_channels": sorted(allowed)},
        )


async def _vehicle(uow: UnitOfWork, dealer_id: str, interest: Mapping[str, Any]) -> Vehicle | None:
    if interest.get("vin"):
        return await uow.inventory.get_by_vin(dealer_id, str(interest["vin"]).upper())
    if interest.get("stock"):
        return await uow.inventory.get_by_stock(dealer_id, str(interest["stock"]))
    return None


def _interest(interest: Mapping[str, Any], vehicle: Vehicle | None) -> dict[str, Any]:
    out = dict(interest)
    if vehicle is not None:
        out.update(vehicle_id=vehicle.id, vin=vehicle.vin, stock=vehicle.stock, year=vehicle.year)
        out.update(make=vehicle.make, model=vehicle.model, condition=vehicle.condition.value)
        if vehicle.trim:
            out["trim"] = vehicle.trim
    return out


def _grant(request: Mapping[str, Any], lead: Lead, ctx: ExecutionContext) -> ConsentGrant:
    consent: Mapping[str, Any] = request["consent"]
    return ConsentGrant(
        id=new_id("cons"),
        dealership_id=lead.dealership_id,
        customer_id=lead.customer_id,
        lead_id=lead.id,
        scope=tuple(consent["scope"]),
        allowed_channels=tuple(Channel(c) for c in consent["allowed_channels"]),
        granted_at=parse_rfc3339(str(consent["granted_at"])),
        expires_at=parse_rfc3339(str(consent["expires_at"])) if consent.get("expires_at") else None,
        source_agent=str(consent["source_agent"]),
        evidence={
            "consent_text": consent["consent_text"],
            "recorded_via": "aap.lead.submit",
            "submitted_by": request["source_agent"],
            "trace_id": ctx.trace_id,
        },
        created_at=ctx.now,
    )


def _appointment_block(appt: Appointment | None, proposals: list[tuple[datetime, datetime]]) -> dict[str, Any] | None:
    if appt is None:
        return None
    block: dict[str, Any] = {"appointment_id": appt.id, "status": appt.status.value}
    if appt.status == AppointmentStatus.CONFIRMED:
        block["confirmed_window"] = {"start": rfc3339(appt.start), "end": rfc3339(appt.end)}
    elif appt.status == AppointmentStatus.PROPOSED:
        block["proposed_slots"] = [{"start": rfc3339(s), "end": rfc3339(e)} for s, e in proposals]
    return block


def response(
    lead: Lead, dealer: Dealership, appt: Appointment | None, proposals: list[tuple[datetime, datetime]]
) -> dict[str, Any]:
    """The ``lead.submit.response`` payload."""
    data: dict[str, Any] = {"lead_id": lead.id, "status": _STATUS.get(lead.status, "received")}
    block = _appointment_block(appt, proposals)
    if block is not None:
        data["appointment"] = block
    contact: dict[str, Any] = {"name": dealer.name}
    phone = sales_phone(dealer)
    if phone:
        contact["phone"] = phone
    data["dealer"] = contact
    note = "Thank you: the dealership received this lead and will follow up on the consented channels."
    if lead.status == LeadStatus.DUPLICATE:
        note = "The dealership already has a recent lead for this buyer and vehicle; this one was merged with it."
    if appt is not None and appt.status == AppointmentStatus.PROPOSED:
        note += " None of the requested times is free; please pick one of the proposed slots."
    return {"type": "lead.submit.response", "data": data, "message": note}


async def _replay(
    uow: UnitOfWork, dealer: Dealership, key: str | None, fingerprint: str, now: datetime
) -> dict[str, Any] | None:
    """The original response for an idempotency key used within 24 h (a different request under it conflicts)."""
    if not key:
        return None
    earlier = await uow.leads.find_by_idempotency_key(dealer.id, key, now - DEDUPE_WINDOW)
    if earlier is None:
        return None
    if earlier.fingerprint not in (None, fingerprint):
        raise IdempotencyConflict()
    appt = await uow.service.get_appointment(dealer.id, earlier.appointment_id) if earlier.appointment_id else None
    proposals = [(appt.start, appt.end)] if appt is not None and appt.status == AppointmentStatus.PROPOSED else []
    if appt is not None and appt.status not in _SHOWN:
        appt = None
    return response(earlier, dealer, appt, proposals)


async def _appointment(
    uow: UnitOfWork, dealer: Dealership, request: Mapping[str, Any], lead: Lead, now: datetime
) -> tuple[Appointment | None, list[tuple[datetime, datetime]]]:
    wanted: Mapping[str, Any] | None = request.get("appointment")
    if not wanted:
        return None, []
    first, last = appointments.search_range(wanted, now)
    booked, _ = await uow.service.list_appointments(dealer.id, first, last, 0, 1000)
    chosen = appointments.plan(dealer, wanted, booked, now)
    start = chosen.start or now
    appt = Appointment(
        id=new_id("appt"),
        dealership_id=dealer.id,
        kind=appointments.KINDS.get(str(wanted["appointment_type"]), AppointmentKind.SALES),
        status=chosen.status,
        start=start,
        end=chosen.end or start + appointments.duration_of(wanted),
        customer_id=lead.customer_id,
        lead_id=lead.id,
        vehicle_id=lead.vehicle_id,
        created_at=now,
        updated_at=now,
    )
    return appt, chosen.proposals


def _delivery(lead: Lead, dealer: Dealership, body: str, now: datetime) -> Delivery:
    return Delivery(
        id=f"crm-adf-{lead.id}",
        kind=CRM_KIND,
        dealership_id=dealer.id,
        target=dealer.crm_endpoint or "",
        subject_id=lead.id,
        body=body,
        content_type=ADF_CONTENT_TYPE,
        status="pending" if dealer.crm_endpoint else "no_endpoint",
        next_attempt_at=now,
        created_at=now,
    )


async def submit(request: Mapping[str, Any], dealer: Dealership, ctx: ExecutionContext) -> dict[str, Any]:
    """Accept (or replay) one lead and answer the ``lead.submit.response`` payload."""
    contact: Mapping[str, Any] = request["customer"]
    email, phone = normalise_email(contact.get("email")), normalise_phone(contact.get("phone"))
    interest: Mapping[str, Any] = request.get("vehicle_of_interest") or {}
    key = request.get("idempotency_key") or ctx.idempotency_key
    async with ctx.store.transaction() as uow:
        vehicle = await _vehicle(uow, dealer.id, interest)
        fingerprint = lead_fingerprint(dealer.id, email, phone, vehicle_key(vehicle.id if vehicle else None, interest))
        replayed = await _replay(uow, dealer, key, fingerprint, ctx.now)
        if replayed is not None:
            return replayed
        check_consent(request, ctx.now)
        if vehicle is not None and not vehicle.status.offerable and vehicle.status != VehicleStatus.PENDING:
            raise VehicleUnavailable(details={"vehicle_id": vehicle.id, "status": vehicle.status.label})
        address: Mapping[str, Any] = contact.get("address") or {}
        preferred = contact.get("preferred_contact")
        customer = await _upsert_customer(
            uow,
            dealer.id,
            {
                "first_name": contact["first_name"],
                "last_name": contact["last_name"],
                "postal_code": address.get("zip"),
                "preferred_channel": preferred if preferred in ("email", "phone", "sms") else None,
            },
            email=email,
            phone=phone,
            now=ctx.now,
        )
        earlier = await uow.leads.find_by_fingerprint(dealer.id, fingerprint, ctx.now - DEDUPE_WINDOW)
        lead = Lead(
            id=new_id("lead"),
            dealership_id=dealer.id,
            customer_id=customer.id,
            status=LeadStatus.DUPLICATE if earlier else LeadStatus.NEW,
            source="aap",
            source_agent=str(request["source_agent"]),
            vehicle_id=vehicle.id if vehicle else None,
            vehicle_of_interest=_interest(interest, vehicle),
            trade_in=dict(request["trade_in"]) if request.get("trade_in") else None,
            message=request.get("message"),
            duplicate_of=(earlier.duplicate_of or earlier.id) if earlier else None,
            idempotency_key=key,
            fingerprint=fingerprint,
            submitted_at=parse_rfc3339(str(request["submitted_at"])) if request.get("submitted_at") else ctx.now,
            created_at=ctx.now,
            updated_at=ctx.now,
        )
        grant = _grant(request, lead, ctx)
        appt, proposals = await _appointment(uow, dealer, request, lead, ctx.now)
        lead = lead.model_copy(update={"consent_id": grant.id, "appointment_id": appt.id if appt else None})
        await uow.leads.add(lead)
        await uow.consent.add(grant)
        if appt is not None:
            await uow.service.add_appointment(appt)
        notes = (request.get("appointment") or {}).get("notes")
        adf = render_adf(
            lead,
            customer,
            dealer,
            consent=grant,
            appointment=appt,
            address=address,
            preferred_contact=preferred,
            appointment_notes=notes,
        )
        await uow.deliveries.add(_delivery(lead, dealer, adf, ctx.now))
    logger.info("AAP lead %s accepted for dealership %s (status %s)", lead.id, dealer.id, lead.status.value)
    return response(lead, dealer, appt, proposals)
