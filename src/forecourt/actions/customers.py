"""The ``customers.*`` and ``consent.*`` actions. Consent grants are never deleted, only revoked."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, ExecutionContext, Handler
from forecourt.actions.common import (
    ID,
    NULLABLE_STRING,
    NULLABLE_TIMESTAMP,
    TIMESTAMP,
    dealer_action,
    input_schema,
    new_id,
    obj,
    opt_str,
    output_schema,
    page_schema,
    require_dealership,
    result,
)
from forecourt.actions.lead_rules import check_consent_transition
from forecourt.actions.leads_schemas import CHANNELS, CONSENT_SCOPE
from forecourt.actions.representations import consent_repr, consent_status, customer_repr
from forecourt.contract.paging import next_cursor, open_page, page_output
from forecourt.domain.people import Channel, ConsentGrant, ConsentStatus
from forecourt.domain.timeutil import parse_rfc3339, rfc3339
from forecourt.errors import ConsentNotFound, CustomerNotFound, InvalidConsent, InvalidConsentTransition, LeadNotFound

logger = logging.getLogger(__name__)

CUSTOMERS_READ = "amcp:leads:read"
CONSENT_READ, CONSENT_WRITE = "amcp:consent:read", "amcp:consent:write"

CUSTOMER: dict[str, Any] = obj(
    {
        "id": ID,
        "first_name": {"type": "string"},
        "last_name": {"type": "string"},
        "email": NULLABLE_STRING,
        "phone": NULLABLE_STRING,
        "postal_code": NULLABLE_STRING,
        "preferred_channel": {"enum": [*(c.value for c in Channel), None]},
        "possible_duplicate_of": {
            **NULLABLE_STRING,
            "description": "An earlier customer sharing this one's e-mail or phone under another name.",
        },
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
    }
)
CONSENT: dict[str, Any] = obj(
    {
        "id": ID,
        "customer_id": NULLABLE_STRING,
        "lead_id": NULLABLE_STRING,
        "scope": {"type": "array", "items": {"type": "string"}},
        "allowed_channels": {"type": "array", "items": {"enum": [c.value for c in Channel]}},
        "status": {"enum": [s.value for s in ConsentStatus]},
        "granted_at": TIMESTAMP,
        "expires_at": NULLABLE_TIMESTAMP,
        "revoked_at": NULLABLE_TIMESTAMP,
        "source_agent": NULLABLE_STRING,
        "consent_text": NULLABLE_STRING,
        "created_at": TIMESTAMP,
    }
)


async def customers_list(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One page of customers."""
    dealership_id = require_dealership(ctx)
    page = open_page(ctx.settings, ctx.action.name, dealership_id, payload, now=ctx.now)
    async with ctx.store.transaction() as uow:
        customers, total = await uow.customers.page(dealership_id, page.offset, page.limit)
    items = [customer_repr(c) for c in customers]
    return result(page_output(items, next_cursor(ctx.settings, page, len(items), total), total), total=total)


async def customers_get(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One customer by id."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        customer = await uow.customers.get(dealership_id, str(payload["customer_id"]))
    if customer is None:
        raise CustomerNotFound()
    return result(customer_repr(customer))


async def consent_list(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One page of consent grants, optionally for one customer."""
    dealership_id = require_dealership(ctx)
    page = open_page(ctx.settings, ctx.action.name, dealership_id, payload, now=ctx.now)
    async with ctx.store.transaction() as uow:
        grants, total = await uow.consent.page(
            dealership_id, page.offset, page.limit, customer_id=opt_str(payload, "customer_id")
        )
    items = [consent_repr(g, ctx.now) for g in grants]
    return result(page_output(items, next_cursor(ctx.settings, page, len(items), total), total), total=total)


async def consent_get(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """One consent grant by id."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        grant = await uow.consent.get(dealership_id, str(payload["consent_id"]))
    if grant is None:
        raise ConsentNotFound()
    return result(consent_repr(grant, ctx.now))


async def consent_create(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Record a new consent grant for a customer (directly or through one of their leads)."""
    dealership_id = require_dealership(ctx)
    customer_id, lead_id = opt_str(payload, "customer_id"), opt_str(payload, "lead_id")
    expires_at = parse_rfc3339(payload["expires_at"]) if payload.get("expires_at") else None
    if expires_at is not None and expires_at <= ctx.now:
        raise InvalidConsent("expires_at must be in the future.", details={"field": "expires_at"})
    async with ctx.store.transaction() as uow:
        if lead_id is not None:
            lead = await uow.leads.get(dealership_id, lead_id)
            if lead is None:
                raise LeadNotFound()
            customer_id = customer_id or lead.customer_id
        if customer_id is not None and await uow.customers.get(dealership_id, customer_id) is None:
            raise CustomerNotFound()
        evidence: dict[str, Any] = {"recorded_via": ctx.action.name, "trace_id": ctx.trace_id}
        if payload.get("consent_text"):
            evidence["consent_text"] = payload["consent_text"]
        grant = ConsentGrant(
            id=new_id("cons"),
            dealership_id=dealership_id,
            customer_id=customer_id,
            lead_id=lead_id,
            scope=tuple(payload["scope"]),
            allowed_channels=tuple(Channel(c) for c in payload["allowed_channels"]),
            granted_at=parse_rfc3339(payload["granted_at"]) if payload.get("granted_at") else ctx.now,
            expires_at=expires_at,
            source_agent=opt_str(payload, "source_agent") or ctx.principal.member_id,
            evidence=evidence,
            created_at=ctx.now,
        )
        await uow.consent.add(grant)
    logger.info("consent %s recorded for dealership %s", grant.id, dealership_id)
    return result(consent_repr(grant, ctx.now))


async def consent_update(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Revoke a consent grant; the record is kept with the revocation time and reason."""
    dealership_id = require_dealership(ctx)
    async with ctx.store.transaction() as uow:
        grant = await uow.consent.get(dealership_id, str(payload["consent_id"]))
        if grant is None:
            raise ConsentNotFound()
        current = ConsentStatus(consent_status(grant, ctx.now))
        if current == ConsentStatus.EXPIRED:
            raise InvalidConsentTransition(details={"from": current.value, "to": payload["status"]})
        check_consent_transition(current, ConsentStatus(payload["status"]))
        if current != ConsentStatus.REVOKED:
            revocation: dict[str, Any] = {"at": rfc3339(ctx.now), "by": ctx.principal.member_id}
            if payload.get("reason"):
                revocation["reason"] = payload["reason"]
            grant = grant.model_copy(
                update={"status": ConsentStatus.REVOKED, "evidence": {**grant.evidence, "revocation": revocation}}
            )
            await uow.consent.update(grant)
    return result(consent_repr(grant, ctx.now))


_PAGED_CUSTOMER = page_schema(CUSTOMER)
ACTIONS: tuple[Action, ...] = (
    dealer_action(
        "customers.list",
        title="List customers",
        description=(
            "List the dealership's customers (contact details: PII; handle accordingly). Returns {items, "
            "next_cursor, total}; pass next_cursor back for the next page. Use it to browse customers; for one "
            "customer use customers.get."
        ),
        input=input_schema({}, paged=True),
        output=_PAGED_CUSTOMER,
        scope=CUSTOMERS_READ,
        tags=("customers",),
        example={"limit": 10},
    ),
    dealer_action(
        "customers.get",
        title="Get a customer",
        description=(
            "Fetch one customer's contact details by `customer_id` (as found on a lead). Check consent.list for the "
            "channels they agreed to before contacting them. Fails with customers.customer_not_found. Use it to get "
            "the contact details behind a lead's customer_id."
        ),
        input=input_schema({"customer_id": ID}, ["customer_id"]),
        output=output_schema(CUSTOMER),
        scope=CUSTOMERS_READ,
        tags=("customers",),
        example={"customer_id": "cus_tsf_0001"},
    ),
    dealer_action(
        "consent.list",
        title="List consent records",
        description=(
            "List consent grants (who agreed to be contacted, about what, on which channels, until when), "
            "optionally for one `customer_id`. `status` is granted, revoked or expired (a grant past its "
            "expires_at). Contact a customer only on a channel in a granted record's allowed_channels. Use it "
            "before any outreach."
        ),
        input=input_schema({"customer_id": ID}, paged=True),
        output=page_schema(CONSENT),
        scope=CONSENT_READ,
        tags=("consent",),
        example={"customer_id": "cus_tsf_0001"},
    ),
    dealer_action(
        "consent.get",
        title="Get a consent record",
        description=(
            "Fetch one consent grant by `consent_id`. Fails with consent.consent_not_found. Use it to check one "
            "grant's status and channels."
        ),
        input=input_schema({"consent_id": ID}, ["consent_id"]),
        output=output_schema(CONSENT),
        scope=CONSENT_READ,
        tags=("consent",),
        example={"consent_id": "cons_tsf_0001"},
    ),
    dealer_action(
        "consent.create",
        title="Record consent",
        description=(
            "Record that a customer agreed to be contacted: `scope` (what for, e.g. lead_submission, marketing, "
            "service_updates), `allowed_channels` (email, phone, sms), optional `expires_at` (RFC 3339, in the "
            "future) and the consent wording. Give `customer_id`, or `lead_id` to attach it to a lead (and that "
            "lead's customer). Records are kept as an audit trail and never deleted. Use it when a customer gives "
            "permission to be contacted."
        ),
        input=input_schema(
            {
                "customer_id": ID,
                "lead_id": ID,
                "scope": CONSENT_SCOPE,
                "allowed_channels": CHANNELS,
                "granted_at": TIMESTAMP,
                "expires_at": TIMESTAMP,
                "consent_text": {"type": "string", "minLength": 1, "maxLength": 4000},
                "source_agent": {"type": "string", "minLength": 1, "maxLength": 128},
            },
            ["scope", "allowed_channels"],
            anyOf=[{"required": ["customer_id"]}, {"required": ["lead_id"]}],
        ),
        output=output_schema(CONSENT),
        scope=CONSENT_WRITE,
        side_effect=True,
        idempotent=False,
        timeout_s=10.0,
        tags=("consent",),
        example={"customer_id": "cus_tsf_0001", "scope": ["marketing"], "allowed_channels": ["email"]},
    ),
    dealer_action(
        "consent.update",
        title="Revoke consent",
        description=(
            "Revoke a consent grant (`status`: revoked), with an optional reason. Only a granted record can be "
            "revoked (revoking an already revoked one changes nothing); an expired one fails with "
            "consent.invalid_status_transition. The record is kept, never deleted. Use it when a customer withdraws "
            "permission."
        ),
        input=input_schema(
            {"consent_id": ID, "status": {"const": "revoked"}, "reason": {"type": "string", "maxLength": 500}},
            ["consent_id", "status"],
        ),
        output=output_schema(CONSENT),
        scope=CONSENT_WRITE,
        side_effect=True,
        destructive=True,  # irreversible: a revoked grant never becomes granted again
        idempotent=True,
        timeout_s=10.0,
        tags=("consent",),
        example={"consent_id": "cons_tsf_0001", "status": "revoked"},
    ),
)

HANDLERS: dict[str, Handler] = {
    "customers.list": customers_list,
    "customers.get": customers_get,
    "consent.list": consent_list,
    "consent.get": consent_get,
    "consent.create": consent_create,
    "consent.update": consent_update,
}
