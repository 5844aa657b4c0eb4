"""The ``leads.*`` actions: list, get, create (with customer dedupe, consent and duplicate detection), update."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from forecourt.actions.base import Action, AdapterResult, ExecutionContext, Handler
from forecourt.actions.dealer import leads_schemas as s
from forecourt.actions.dealer.common import dealer_action, new_id, opt_str, require_dealership, result
from forecourt.actions.dealer.lead_rules import (
    check_lead_transition,
    lead_fingerprint,
    normalise_email,
    normalise_phone,
    vehicle_key,
)
from forecourt.actions.dealer.representations import lead_repr
from forecourt.actions.paging import next_cursor, open_page, page_output
from forecourt.domain.people import Channel, ConsentGrant, Customer, Lead, LeadStatus
from forecourt.domain.timeutil import parse_rfc3339
from forecourt.domain.vehicle import Vehicle, VehicleStatus
from forecourt.errors import IdempotencyConflict, InvalidConsent, LeadNotFound, VehicleNotFound, VehicleUnavailable
from forecourt.store.base import UnitOfWork

logger = logging.getLogger(__name__)

READ, WRITE = "amcp:leads:read", "amcp:leads:write"
DEDUPE_WINDOW = timedelta(hours=24)
LEAD_CONSENT_SCOPE = "lead_submission"
_CLOCK_SKEW = timedelta(minutes=5)
_UNAVAILABLE = (VehicleStatus.SOLD, VehicleStatus.REMOVED)


async def leads_list(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One page of leads, newest first as the store orders them, optionally by status."""
    dealership_id = require_dealership(ctx)
    page = open_page(ctx.settings, ctx.action.name, dealership_id, payload, now=ctx.now)
    async with ctx.store.transaction() as uow:
        leads, total = await uow.leads.page(dealership_id, page.offset, page.limit, opt_str(payload, "status"))
    items = [lead_repr(lead) for lead in leads]
    return result(page_output(items, next_cursor(ctx.settings, page, len(items), total), total), total=total)


async def leads_get(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One lead by id."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        lead = await uow.leads.get(dealership_id, str(payload["lead_id"]))
    if lead is None:
        raise LeadNotFound()
    return result(lead_repr(lead))


def check_consent(consent: Mapping[str, Any] | None, now: datetime) -> None:
    """Reject consent that does not cover lead submission, has expired, or is dated in the future."""
    if consent is None:
        return
    if LEAD_CONSENT_SCOPE not in (consent.get("scope") or [LEAD_CONSENT_SCOPE]):
        raise InvalidConsent("The consent scope must include lead_submission.", details={"field": "consent.scope"})
    if "expires_at" in consent and parse_rfc3339(consent["expires_at"]) <= now:
        raise InvalidConsent("The consent has already expired.", details={"field": "consent.expires_at"})
    if "granted_at" in consent and parse_rfc3339(consent["granted_at"]) > now + _CLOCK_SKEW:
        raise InvalidConsent("The consent is dated in the future.", details={"field": "consent.granted_at"})


async def _resolve_vehicle(uow: UnitOfWork, dealership_id: str, interest: Mapping[str, Any]) -> Vehicle | None:
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
        out.update(
            vin=vehicle.vin,
            stock=vehicle.stock,
            year=vehicle.year,
            make=vehicle.make,
            model=vehicle.model,
            trim=vehicle.trim,
            condition=vehicle.condition.value,
        )
    return out


async def _upsert_customer(
    uow: UnitOfWork,
    dealership_id: str,
    contact: Mapping[str, Any],
    *,
    email: str | None,
    phone: str | None,
    now: datetime,
) -> Customer:
    """Find the customer by normalised e-mail or phone, filling in what they did not have; else create one."""
    channel = Channel(contact["preferred_channel"]) if contact.get("preferred_channel") else None
    existing = await uow.customers.find_by_contact(dealership_id, email, phone)
    if existing is None:
        customer = Customer(
            id=new_id("cust"),
            dealership_id=dealership_id,
            first_name=str(contact.get("first_name", "")),
            last_name=str(contact.get("last_name", "")),
            email=email,
            phone=phone,
            postal_code=opt_str(contact, "postal_code"),
            preferred_channel=channel,
            created_at=now,
            updated_at=now,
        )
        await uow.customers.add(customer)
        return customer
    fill = {
        "email": existing.email or email,
        "phone": existing.phone or phone,
        "postal_code": existing.postal_code or opt_str(contact, "postal_code"),
        "preferred_channel": channel or existing.preferred_channel,
        "last_name": existing.last_name or str(contact.get("last_name", "")),
    }
    if all(getattr(existing, k) == v for k, v in fill.items()):
        return existing
    updated = existing.model_copy(update={**fill, "updated_at": now})
    await uow.customers.update(updated)
    return updated


def _grant(consent: Mapping[str, Any], lead: Lead, ctx: ExecutionContext) -> ConsentGrant:
    evidence: dict[str, Any] = {"recorded_via": ctx.action.name, "trace_id": ctx.trace_id}
    if consent.get("consent_text"):
        evidence["consent_text"] = consent["consent_text"]
    return ConsentGrant(
        id=new_id("cons"),
        dealership_id=lead.dealership_id,
        customer_id=lead.customer_id,
        lead_id=lead.id,
        scope=tuple(consent.get("scope") or (LEAD_CONSENT_SCOPE,)),
        allowed_channels=tuple(Channel(c) for c in consent["allowed_channels"]),
        granted_at=parse_rfc3339(consent["granted_at"]) if consent.get("granted_at") else ctx.now,
        expires_at=parse_rfc3339(consent["expires_at"]) if consent.get("expires_at") else None,
        source_agent=opt_str(consent, "source_agent") or lead.source_agent,
        evidence=evidence,
        created_at=ctx.now,
    )


async def _replay(uow: UnitOfWork, dealership_id: str, key: str | None, fingerprint: str, now: datetime) -> Lead | None:
    """The lead an idempotency key already produced within 24 h; a different request under it is a conflict."""
    if not key:
        return None
    earlier = await uow.leads.find_by_idempotency_key(dealership_id, key, now - DEDUPE_WINDOW)
    if earlier is not None and earlier.fingerprint not in (None, fingerprint):
        raise IdempotencyConflict()
    return earlier


async def leads_create(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Create a lead (or return the one an idempotency key already created)."""
    dealership_id = require_dealership(ctx)
    contact: Mapping[str, Any] = payload["customer"]
    email, phone = normalise_email(contact.get("email")), normalise_phone(contact.get("phone"))
    interest: Mapping[str, Any] = payload.get("vehicle_of_interest") or {}
    consent: Mapping[str, Any] | None = payload.get("consent")
    key = opt_str(payload, "idempotency_key") or ctx.idempotency_key
    async with ctx.store.transaction() as uow:
        vehicle = await _resolve_vehicle(uow, dealership_id, interest)
        fingerprint = lead_fingerprint(
            dealership_id, email, phone, vehicle_key(vehicle.id if vehicle else None, interest)
        )
        replayed = await _replay(uow, dealership_id, key, fingerprint, ctx.now)
        if replayed is not None:
            return result(lead_repr(replayed), replayed=True)
        if vehicle is not None and vehicle.status in _UNAVAILABLE:
            raise VehicleUnavailable(details={"vehicle_id": vehicle.id, "status": vehicle.status.value})
        check_consent(consent, ctx.now)
        customer = await _upsert_customer(uow, dealership_id, contact, email=email, phone=phone, now=ctx.now)
        earlier = await uow.leads.find_by_fingerprint(dealership_id, fingerprint, ctx.now - DEDUPE_WINDOW)
        lead = Lead(
            id=new_id("lead"),
            dealership_id=dealership_id,
            customer_id=customer.id,
            status=LeadStatus.DUPLICATE if earlier else LeadStatus.NEW,
            source=opt_str(payload, "source") or "agent",
            source_agent=opt_str(payload, "source_agent") or ctx.principal.member_id,
            vehicle_id=vehicle.id if vehicle else None,
            vehicle_of_interest=_interest(interest, vehicle),
            trade_in=dict(payload["trade_in"]) if payload.get("trade_in") else None,
            message=opt_str(payload, "message"),
            duplicate_of=(earlier.duplicate_of or earlier.id) if earlier else None,
            idempotency_key=key,
            fingerprint=fingerprint,
            submitted_at=parse_rfc3339(payload["submitted_at"]) if payload.get("submitted_at") else ctx.now,
            created_at=ctx.now,
            updated_at=ctx.now,
        )
        grant = _grant(consent, lead, ctx) if consent is not None else None
        if grant is not None:
            lead = lead.model_copy(update={"consent_id": grant.id})
        await uow.leads.add(lead)
        if grant is not None:
            await uow.consent.add(grant)
    logger.info("lead %s created for dealership %s (status %s)", lead.id, dealership_id, lead.status.value)
    return result(lead_repr(lead), replayed=False)


async def leads_update(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Change a lead's status (validated), assignee or message."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        lead = await uow.leads.get(dealership_id, str(payload["lead_id"]))
        if lead is None:
            raise LeadNotFound()
        changes: dict[str, Any] = {}
        if "status" in payload:
            target = LeadStatus(payload["status"])
            check_lead_transition(lead.status, target)
            changes["status"] = target
            if lead.status == LeadStatus.DUPLICATE and target == LeadStatus.NEW:
                changes["duplicate_of"] = None  # re-opened as a lead in its own right
        if "assigned_to" in payload:
            changes["assigned_to"] = payload["assigned_to"]
        if "message" in payload:
            changes["message"] = payload["message"]
        if any(getattr(lead, k) != v for k, v in changes.items()):
            lead = lead.model_copy(update={**changes, "updated_at": ctx.now})
            await uow.leads.update(lead)
    return result(lead_repr(lead))


ACTIONS: tuple[Action, ...] = (
    dealer_action(
        "leads.list",
        title="List leads",
        description=(
            "List the dealership's sales leads, optionally only those with one `status` (new, duplicate, "
            "contacted, qualified, appointment_set, sold, lost, closed). Returns {items, next_cursor, total}; "
            "pass next_cursor back for the next page. Leads reference customers by customer_id; use "
            "customers.get for contact details."
        ),
        input=s.LIST_IN,
        output=s.LIST_OUT,
        scope=READ,
        tags=("leads",),
    ),
    dealer_action(
        "leads.get",
        title="Get a lead",
        description="Fetch one lead by `lead_id`. Fails with leads.lead_not_found when it does not exist here.",
        input=s.GET_IN,
        output=s.LEAD_OUT,
        scope=READ,
        tags=("leads",),
    ),
    dealer_action(
        "leads.create",
        title="Create a lead",
        description=(
            "Record a buyer's interest: their contact details (e-mail or phone required), optionally the "
            "vehicle of interest (vehicle_id, VIN or stock number from inventory, or just year/make/model), "
            "a trade-in (mileage as {value, unit}), a message and their consent to be contacted (recorded "
            "as a consent grant; its scope must include lead_submission). The customer is matched by "
            "e-mail or phone or created. The same contact asking about the same vehicle within 24 h gives "
            "status `duplicate` with `duplicate_of`. Retrying with the same idempotency_key within 24 h "
            "returns the original lead. A sold or removed vehicle fails with inventory.vehicle_unavailable."
        ),
        input=s.CREATE_IN,
        output=s.LEAD_OUT,
        scope=WRITE,
        side_effect=True,
        idempotent=False,
        timeout_s=10.0,
        tags=("leads", "consent"),
    ),
    dealer_action(
        "leads.update",
        title="Update a lead",
        description=(
            "Change a lead's `status`, `assigned_to` (a team member id, or null to unassign) or `message`. "
            "Status follows the lifecycle new → contacted → qualified → appointment_set → sold/lost → closed "
            "(a closed lead stays closed); a disallowed move fails with leads.invalid_status_transition."
        ),
        input=s.UPDATE_IN,
        output=s.LEAD_OUT,
        scope=WRITE,
        side_effect=True,
        idempotent=True,
        timeout_s=10.0,
        tags=("leads",),
    ),
)

HANDLERS: dict[str, Handler] = {
    "leads.list": leads_list,
    "leads.get": leads_get,
    "leads.create": leads_create,
    "leads.update": leads_update,
}
