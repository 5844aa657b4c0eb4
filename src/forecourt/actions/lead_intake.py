"""The one lead intake: every door that accepts a lead (``leads.create``, ``aap.lead.submit``) calls
:func:`intake_lead`, so consent, customer matching, duplicates, idempotent replay, appointments and the CRM
delivery are decided once.

Everything a lead produces is written in one transaction: the customer, the lead, the ConsentGrant (kept
verbatim as the record of what the buyer agreed to), the appointment, and the ADF delivery row for the
dealership's CRM (the delivery worker sends it with retries). So a lead is never accepted without its
delivery being queued, and a CRM that is down loses nothing.

Customer matching never attaches a lead or a consent to someone else: a lead joins an existing customer only
when the e-mail address AND the name match; a shared e-mail or phone under another name creates a new
customer flagged ``possible_duplicate_of`` for the dealer to decide. A duplicate lead (same contact and
vehicle within 24 h) reuses the first lead's appointment instead of booking the slot again.

What legitimately differs between doors is explicit in :class:`IntakeRules` (AAP's exact consent scope and
its required consent); each door translates the :class:`Intake` it gets back into its own answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from forecourt.actions import sales_appointments
from forecourt.actions.adf import render_adf
from forecourt.actions.common import new_id
from forecourt.actions.crm_mail import queue_mail_deliveries
from forecourt.actions.lead_rules import lead_fingerprint, normalise_email, vehicle_key
from forecourt.domain.people import Channel, ConsentGrant, Customer, Lead, LeadStatus, email_problem
from forecourt.domain.service import Appointment, AppointmentKind, AppointmentStatus
from forecourt.domain.tenancy import Dealership
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.domain.values import customer_phone
from forecourt.domain.vehicle import Vehicle, VehicleStatus
from forecourt.errors import (
    ConsentRequired,
    DealershipNotFound,
    IdempotencyConflict,
    InvalidConsent,
    InvalidParams,
    VehicleNotFound,
    VehicleUnavailable,
)
from forecourt.store.base import Delivery, UnitOfWork

logger = logging.getLogger(__name__)

DEDUPE_WINDOW = timedelta(hours=24)
CLOCK_SKEW = timedelta(minutes=5)
LEAD_CONSENT_SCOPE = "lead_submission"
ADF_CONTENT_TYPE = "application/xml"
CRM_KIND = "crm_adf"


@dataclass(frozen=True)
class IntakeRules:
    """What a door asks of a lead beyond the shared rules."""

    recorded_via: str
    """The action name recorded in the consent evidence."""
    source: str = "agent"
    consent_required: bool = False
    exact_consent_scope: bool = False
    """AAP: the scope must be exactly ``["lead_submission"]`` (otherwise it must include it)."""
    preferred_channel_consented: bool = False
    """AAP: the buyer's preferred follow-up channel must be one the consent allows."""


@dataclass(frozen=True)
class LeadRequest:
    """A lead as every door hands it over (already schema-validated)."""

    first_name: str
    last_name: str
    email: str | None
    phone: str | None
    postal_code: str | None = None
    preferred_channel: Channel | None = None
    preferred_contact: str | None = None
    address: Mapping[str, Any] = field(default_factory=dict)
    interest: Mapping[str, Any] = field(default_factory=dict)
    trade_in: Mapping[str, Any] | None = None
    message: str | None = None
    source_agent: str | None = None
    submitted_at: str | None = None
    consent: Mapping[str, Any] | None = None
    appointment: Mapping[str, Any] | None = None
    idempotency_key: str | None = None


@dataclass
class Intake:
    """What the intake did: the lead (new or replayed) and what came with it."""

    lead: Lead
    dealer: Dealership
    appointment: Appointment | None = None
    proposals: list[tuple[datetime, datetime]] = field(default_factory=list)
    replayed: bool = False
    repeat_of_own: bool = False
    """A duplicate of a lead the same source agent sent before (safe to tell that caller)."""


def check_consent(consent: Mapping[str, Any] | None, request: LeadRequest, rules: IntakeRules, now: datetime) -> None:
    """Consent rules: present when required, the right scope, not expired, not future-dated, channel allowed."""
    if consent is None:
        if rules.consent_required:
            raise InvalidConsent("Consent is required.", details={"field": "consent"})
        return
    scope = list(consent.get("scope") or [LEAD_CONSENT_SCOPE])
    if rules.exact_consent_scope and scope != [LEAD_CONSENT_SCOPE]:
        raise InvalidConsent('consent.scope must be exactly ["lead_submission"].', details={"field": "consent.scope"})
    if LEAD_CONSENT_SCOPE not in scope:
        raise InvalidConsent("The consent scope must include lead_submission.", details={"field": "consent.scope"})
    if consent.get("expires_at") and parse_rfc3339(str(consent["expires_at"])) <= now:
        raise InvalidConsent("The consent has already expired.", details={"field": "consent.expires_at"})
    if consent.get("granted_at") and parse_rfc3339(str(consent["granted_at"])) > now + CLOCK_SKEW:
        raise InvalidConsent("The consent is dated in the future.", details={"field": "consent.granted_at"})
    preferred = request.preferred_contact
    allowed = set(consent.get("allowed_channels") or ())
    if rules.preferred_channel_consented and preferred and preferred != "any" and preferred not in allowed:
        raise ConsentRequired(
            "The preferred follow-up channel is not among consent.allowed_channels.",
            details={"field": "customer.preferred_contact", "channel": preferred, "allowed_channels": sorted(allowed)},
        )


async def resolve_vehicle(uow: UnitOfWork, dealership_id: str, interest: Mapping[str, Any]) -> Vehicle | None:
    """The inventory unit a lead is about; an unknown ``vehicle_id`` is an error, an unknown VIN/stock is not."""
    if interest.get("vehicle_id"):
        vehicle = await uow.inventory.get(dealership_id, str(interest["vehicle_id"]))
        if vehicle is None:
            raise VehicleNotFound()
        return vehicle
    if interest.get("vin"):
        return await uow.inventory.get_by_vin(dealership_id, str(interest["vin"]).upper())
    if interest.get("stock"):
        return await uow.inventory.get_by_stock(dealership_id, str(interest["stock"]))
    return None


def _interest(interest: Mapping[str, Any], vehicle: Vehicle | None) -> dict[str, Any]:
    out = {k: v for k, v in interest.items() if k != "vehicle_id"}
    if vehicle is not None:
        out.update(vin=vehicle.vin, stock=vehicle.stock, year=vehicle.year, make=vehicle.make, model=vehicle.model)
        out["condition"] = vehicle.condition.value
        if vehicle.trim:
            out["trim"] = vehicle.trim
    return out


def _same_person(customer: Customer, request: LeadRequest) -> bool:
    """Same first name, and the same last name unless one side did not give one (case and spacing aside)."""

    def norm(text: str | None) -> str:
        return " ".join((text or "").split()).casefold()

    if norm(customer.first_name) != norm(request.first_name):
        return False
    last, given = norm(customer.last_name), norm(request.last_name)
    return last == given or not last or not given


def checked_email(address: str | None) -> str | None:
    """The lead's e-mail address, normalised, when :func:`~forecourt.domain.people.email_problem` finds none.

    Every door's schema says ``format: email``, which only asks for an ``@``: an address with a CR/LF and a
    ``Bcc:`` header was accepted, stored and handed to CRMs. The answer names the field and the rule, never the
    address.

    Raises:
        InvalidParams: at ``/customer/email`` (AAP: ``SCHEMA_VALIDATION_FAILED``).
    """
    email = normalise_email(address)
    problem = email_problem(email) if email is not None else None
    if problem is not None:
        where = {"path": "/customer/email", "rule": "format", "expected": "email", "problem": problem}
        raise InvalidParams("customer.email is not an e-mail address.", details={"errors": [where]})
    return email


async def match_customer(
    uow: UnitOfWork, dealership_id: str, request: LeadRequest, *, email: str | None, phone: str | None, now: datetime
) -> Customer:
    """The customer this lead belongs to: the same e-mail and name, else a new customer (flagged when another
    customer shares the e-mail or phone). Missing details of a matched customer are filled in, never replaced."""
    sharing = await uow.customers.sharing_contact(dealership_id, email, phone)
    same = next(
        (c for c in sharing if email and c.email and c.email.lower() == email and _same_person(c, request)), None
    )
    if same is None:
        customer = Customer(
            id=new_id("cust"),
            dealership_id=dealership_id,
            first_name=request.first_name,
            last_name=request.last_name,
            email=email,
            phone=phone,
            postal_code=request.postal_code,
            preferred_channel=request.preferred_channel,
            created_at=now,
            updated_at=now,
            possible_duplicate_of=sharing[0].id if sharing else None,
        )
        await uow.customers.add(customer)
        return customer
    fill = {
        "phone": same.phone or phone,
        "postal_code": same.postal_code or request.postal_code,
        "preferred_channel": request.preferred_channel or same.preferred_channel,
    }
    if all(getattr(same, k) == v for k, v in fill.items()):
        return same
    updated = same.model_copy(update={**fill, "updated_at": now})
    await uow.customers.update(updated)
    return updated


def _grant(request: LeadRequest, rules: IntakeRules, lead: Lead, trace_id: str, now: datetime) -> ConsentGrant:
    consent: Mapping[str, Any] = request.consent or {}
    evidence: dict[str, Any] = {"recorded_via": rules.recorded_via, "trace_id": trace_id}
    if consent.get("consent_text"):
        evidence["consent_text"] = consent["consent_text"]
    if request.source_agent:
        evidence["submitted_by"] = request.source_agent
    return ConsentGrant(
        id=new_id("cons"),
        dealership_id=lead.dealership_id,
        customer_id=lead.customer_id,
        lead_id=lead.id,
        scope=tuple(consent.get("scope") or (LEAD_CONSENT_SCOPE,)),
        allowed_channels=tuple(Channel(c) for c in consent["allowed_channels"]),
        granted_at=parse_rfc3339(str(consent["granted_at"])) if consent.get("granted_at") else now,
        expires_at=parse_rfc3339(str(consent["expires_at"])) if consent.get("expires_at") else None,
        source_agent=str(consent.get("source_agent") or lead.source_agent or "") or None,
        evidence=evidence,
        created_at=now,
    )


async def _replay(
    uow: UnitOfWork, dealer: Dealership, key: str | None, fingerprint: str, now: datetime
) -> Intake | None:
    """The lead an idempotency key already produced within 24 h; a different request under it is a conflict."""
    if not key:
        return None
    earlier = await uow.leads.find_by_idempotency_key(dealer.id, key, now - DEDUPE_WINDOW)
    if earlier is None:
        return None
    if earlier.fingerprint not in (None, fingerprint):
        raise IdempotencyConflict()
    appt = await uow.service.get_appointment(dealer.id, earlier.appointment_id) if earlier.appointment_id else None
    first = await uow.leads.get(dealer.id, earlier.duplicate_of) if earlier.duplicate_of else None
    own = first is not None and first.source_agent is not None and first.source_agent == earlier.source_agent
    return Intake(
        lead=earlier, dealer=dealer, appointment=appt, proposals=_proposed(appt), replayed=True, repeat_of_own=own
    )


def _proposed(appt: Appointment | None) -> list[tuple[datetime, datetime]]:
    return [(appt.start, appt.end)] if appt is not None and appt.status == AppointmentStatus.PROPOSED else []


async def _book(
    uow: UnitOfWork, dealer: Dealership, request: LeadRequest, lead: Lead, earlier: Lead | None, now: datetime
) -> tuple[Appointment | None, list[tuple[datetime, datetime]], bool]:
    """The lead's appointment: the earlier lead's for a duplicate (never a second booking), else a new one.

    Returns the appointment, the proposed slots, and whether it is new (to be stored)."""
    wanted = request.appointment
    if not wanted:
        return None, [], False
    if earlier is not None and earlier.appointment_id:
        appt = await uow.service.get_appointment(dealer.id, earlier.appointment_id)
        if appt is not None:
            return appt, _proposed(appt), False
    first, last = sales_appointments.search_range(wanted, now)
    booked, _ = await uow.service.list_appointments(dealer.id, first, last, 0, 1000)
    chosen = sales_appointments.plan(dealer, wanted, booked, now)
    start = chosen.start or now
    appt = Appointment(
        id=new_id("appt"),
        dealership_id=dealer.id,
        kind=sales_appointments.KINDS.get(str(wanted["appointment_type"]), AppointmentKind.SALES),
        status=chosen.status,
        start=start,
        end=chosen.end or start + sales_appointments.duration_of(wanted),
        customer_id=lead.customer_id,
        lead_id=lead.id,
        vehicle_id=lead.vehicle_id,
        created_at=now,
        updated_at=now,
    )
    return appt, chosen.proposals, True


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


def _unavailable(vehicle: Vehicle | None) -> bool:
    return vehicle is not None and not vehicle.status.offerable and vehicle.status != VehicleStatus.PENDING


async def intake_lead(
    request: LeadRequest,
    rules: IntakeRules,
    *,
    dealership_id: str,
    uow: UnitOfWork,
    now: datetime,
    trace_id: str,
    caller: str | None,
) -> Intake:
    """Accept (or replay) one lead in ``uow``'s transaction.

    Args:
        request: The lead, as the door received it.
        rules: What this door asks beyond the shared rules.
        dealership_id: The dealership the gateway resolved and authorized for the call.
        uow: An open unit of work; everything is written in it.
        now: The call's clock.
        trace_id: Recorded in the consent evidence.
        caller: The calling member (recorded as the source agent when the request names none).

    Raises:
        InvalidParams: the e-mail address is not one (``/customer/email``; see :func:`checked_email`), or the
            phone number is not a valid one for the rooftop's country (``/customer/phone``, rule ``phone``).
        VehicleNotFound, VehicleUnavailable, InvalidConsent, ConsentRequired, IdempotencyConflict,
        AapAppointmentUnavailable: as the rules decide.
    """
    email = checked_email(request.email)
    dealer = await uow.tenancy.get_dealership(dealership_id)
    if dealer is None:
        raise DealershipNotFound()
    phone = customer_phone(request.phone, dealer.address.country)
    vehicle = await resolve_vehicle(uow, dealer.id, request.interest)
    fingerprint = lead_fingerprint(
        dealer.id, email, phone, vehicle_key(vehicle.id if vehicle else None, request.interest)
    )
    replayed = await _replay(uow, dealer, request.idempotency_key, fingerprint, now)
    if replayed is not None:
        return replayed
    check_consent(request.consent, request, rules, now)
    if _unavailable(vehicle):
        assert vehicle is not None
        raise VehicleUnavailable(details={"vehicle_id": vehicle.id, "status": vehicle.status.value})
    customer = await match_customer(uow, dealer.id, request, email=email, phone=phone, now=now)
    earlier = await uow.leads.find_by_fingerprint(dealer.id, fingerprint, now - DEDUPE_WINDOW)
    source_agent = request.source_agent or caller
    lead = Lead(
        id=new_id("lead"),
        dealership_id=dealer.id,
        customer_id=customer.id,
        status=LeadStatus.DUPLICATE if earlier else LeadStatus.NEW,
        source=rules.source,
        source_agent=source_agent,
        vehicle_id=vehicle.id if vehicle else None,
        vehicle_of_interest=_interest(request.interest, vehicle),
        trade_in=dict(request.trade_in) if request.trade_in else None,
        message=request.message,
        duplicate_of=(earlier.duplicate_of or earlier.id) if earlier else None,
        idempotency_key=request.idempotency_key,
        fingerprint=fingerprint,
        submitted_at=parse_rfc3339(request.submitted_at) if request.submitted_at else now,
        created_at=now,
        updated_at=now,
    )
    grant = _grant(request, rules, lead, trace_id, now) if request.consent is not None else None
    appt, proposals, new_appt = await _book(uow, dealer, request, lead, earlier, now)
    lead = lead.model_copy(
        update={"consent_id": grant.id if grant else None, "appointment_id": appt.id if appt else None}
    )
    await uow.leads.add(lead)
    if grant is not None:
        await uow.consent.add(grant)
    if appt is not None and new_appt:
        await uow.service.add_appointment(appt)
    adf = render_adf(
        lead,
        customer,
        dealer,
        consent=grant,
        appointment=appt,
        address=request.address,
        preferred_contact=request.preferred_contact,
        appointment_notes=(request.appointment or {}).get("notes"),
    )
    await uow.deliveries.add(_delivery(lead, dealer, adf, now))
    await queue_mail_deliveries(uow, lead.id, dealer.id, adf, now)
    logger.info("lead %s accepted for dealership %s (status %s)", lead.id, dealer.id, lead.status.value)
    first = (
        (await uow.leads.get(dealer.id, earlier.duplicate_of) if earlier.duplicate_of else earlier) if earlier else None
    )
    own = first is not None and bool(source_agent) and first.source_agent == source_agent
    return Intake(lead=lead, dealer=dealer, appointment=appt, proposals=proposals, repeat_of_own=own)
