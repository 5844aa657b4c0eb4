"""The five AAP skills as gateway actions (``aap.*``), thin translations over the dealer data, and the lead
delivery-status action.

Input schema = the AAP request schema (bundled, so it validates without a registry); output = the AAP
response payload, unchanged. The dealership comes from the invocation (``/dealers/{id}/...``, the
credential, or the public agent), never from the payload: AAP request schemas are closed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from forecourt.actions.aap.discovery import DISCOVER, discover
from forecourt.actions.aap.lead_submit import lead_submit
from forecourt.actions.aap.translate import dealer_to_aap, facets_to_aap, filters_to_query, vehicle_to_aap
from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.base import Handler as BaseHandler
from forecourt.actions.representations import ts
from forecourt.domain.aap_spec import SKILLS, Skill, bundled
from forecourt.domain.tenancy import Dealership
from forecourt.errors import DealershipNotFound, InvalidParams, LeadNotFound, VehicleNotFound, VehicleUnavailable

ADAPTER_ID = "aap"
DELIVERY_STATUS_ACTION = "leads.delivery_status"
_SCOPES = {
    "dealer.information": "amcp:inventory:read",
    "inventory.facets": "amcp:inventory:read",
    "inventory.search": "amcp:inventory:read",
    "inventory.vehicle": "amcp:inventory:read",
    "lead.submit": "amcp:leads:write",
}
_TWINS = {
    "dealer.information": "dealer.information",
    "inventory.facets": "inventory.facets",
    "inventory.search": "inventory.search",
    "inventory.vehicle": "inventory.get",
    "lead.submit": "leads.create",
}
"""The dealer action each skill translates: a skill counts against that action's per-action rate limit."""
_DEFAULT_LIMIT = 20
_FOLLOWS_CHANGES = ("inventory.facets", "inventory.search", "inventory.vehicle")
"""Read skills cached until the dealership's inventory changes (``forecourt.gateway.freshness``); 30 s at most."""

Handler = Callable[[Mapping[str, Any], Dealership, ExecutionContext], Awaitable[dict[str, Any]]]


async def _dealer(ctx: ExecutionContext, *, fresh: bool = False) -> Dealership:
    """The addressed dealership: the gateway's copy for a read, read afresh for a write (``fresh``)."""
    if not ctx.dealership_id:
        raise InvalidParams("The dealership is not known for this call.", details={"field": "dealership_id"})
    if not fresh and ctx.dealership is not None and ctx.dealership.id == ctx.dealership_id:
        return ctx.dealership  # the gateway's copy: the one its result cache key was made from
    async with ctx.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(ctx.dealership_id)
    if dealer is None:
        raise DealershipNotFound()
    return dealer


async def dealer_information(payload: Mapping[str, Any], dealer: Dealership, ctx: ExecutionContext) -> dict[str, Any]:
    """``dealer.information``."""
    async with ctx.store.transaction() as uow:
        company = await uow.tenancy.get_company(dealer.company_id)
    data = dealer_to_aap(dealer, legal_name=company.name if company else None)
    return {"type": "dealer.information.response", "data": data}


async def inventory_facets(payload: Mapping[str, Any], dealer: Dealership, ctx: ExecutionContext) -> dict[str, Any]:
    """``inventory.facets`` over offerable units."""
    query = filters_to_query(dealer, payload.get("filters") or {})
    async with ctx.store.transaction() as uow:
        facets = await uow.inventory.facets(query)
    return {"type": "inventory.facets.response", "data": facets_to_aap(facets, dealer)}


async def inventory_search(payload: Mapping[str, Any], dealer: Dealership, ctx: ExecutionContext) -> dict[str, Any]:
    """``inventory.search``: offset pagination, offerable units only, each with ``last_verified_at``."""
    page = payload.get("pagination") or {}
    skip, limit = int(page.get("skip", 0)), int(page.get("limit", _DEFAULT_LIMIT))
    query = filters_to_query(dealer, payload.get("filters") or {}, skip=skip, limit=limit, sort=payload.get("sort"))
    async with ctx.store.transaction() as uow:
        found = await uow.inventory.search(query)
    vehicles = [vehicle_to_aap(v, dealer) for v in found.items if v.status.offerable]
    data = {"total": found.total, "skip": skip, "limit": limit, "vehicles": vehicles}  # total: at least, when capped
    matched = f"{found.total} vehicles match" if found.total_exact else f"At least {found.total} vehicles match"
    note = f"{matched}. 'price' is the out-the-door amount including fees and tax."
    return {"type": "inventory.search.response", "data": data, "message": note}


async def inventory_vehicle(payload: Mapping[str, Any], dealer: Dealership, ctx: ExecutionContext) -> dict[str, Any]:
    """``inventory.vehicle``; a sold or removed unit is VEHICLE_UNAVAILABLE, never shown as available."""
    async with ctx.store.transaction() as uow:
        if payload.get("vehicle_id"):
            vehicle = await uow.inventory.get(dealer.id, str(payload["vehicle_id"]))
        elif payload.get("vin"):
            vehicle = await uow.inventory.get_by_vin(dealer.id, str(payload["vin"]).upper())
        else:
            vehicle = await uow.inventory.get_by_stock(dealer.id, str(payload["stock"]))
    if vehicle is None:
        raise VehicleNotFound(details={"dealer_id": dealer.id, "suggestion": "Call inventory.search."})
    if not vehicle.status.offerable:
        raise VehicleUnavailable(details={"vehicle_id": vehicle.id, "status": vehicle.status.label})
    zip_code = payload.get("zip") if isinstance(payload.get("zip"), str) and payload.get("zip") else None
    return {"type": "inventory.vehicle.response", "data": vehicle_to_aap(vehicle, dealer, zip_code=zip_code)}


HANDLERS: dict[str, Handler] = {
    "aap.dealer.information": dealer_information,
    "aap.inventory.facets": inventory_facets,
    "aap.inventory.search": inventory_search,
    "aap.inventory.vehicle": inventory_vehicle,
    "aap.lead.submit": lead_submit,
}


async def delivery_status(payload: Mapping[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    """Where a lead's CRM and webhook deliveries stand (no message bodies: they carry PII)."""
    dealership_id = ctx.dealership_id or ""
    lead_id = str(payload["lead_id"])
    async with ctx.store.transaction() as uow:
        lead = await uow.leads.get(dealership_id, lead_id)
        if lead is None:
            raise LeadNotFound()
        found = await uow.deliveries.list_for(lead_id)
    items = [
        {
            "id": d.id,
            "kind": d.kind,
            "status": d.status,
            "attempts": d.attempts,
            "next_attempt_at": ts(d.next_attempt_at),
            "last_error": d.last_error,
            "delivered_at": ts(d.delivered_at),
            "created_at": ts(d.created_at),
        }
        for d in found
        if d.dealership_id == dealership_id
    ]
    return {"lead_id": lead_id, "lead_status": lead.status.value, "deliveries": items}


def _skill(handler: Handler) -> BaseHandler:
    async def run(payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        # The gateway addressed the call (it took any dealership_id out of the payload); the A2A door turned the
        # wire's floats back into integers, so the payload is the AAP request as sent.
        dealer = await _dealer(context, fresh=context.action.side_effect)
        return AdapterResult(output=await handler(payload, dealer, context))

    return run


async def _delivery_status(payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
    return AdapterResult(output=await delivery_status(payload, context))


# When a model should pick each skill, and one example payload (``type`` is added by the MCP surface).
_USE: dict[str, str] = {
    "dealer.information": "Use it when acting for a buyer under the Auto Agent Protocol (AAP).",
    "inventory.search": "Use it to find vehicles for a buyer under the Auto Agent Protocol (AAP).",
    "inventory.facets": "Use it to see what a dealership stocks before an AAP inventory search.",
    "inventory.vehicle": "Use it to confirm one vehicle and its price for a buyer under AAP.",
    "lead.submit": "Use it when a buyer asks the dealership to contact them and has agreed to be contacted.",
}
_EXAMPLES: dict[str, dict[str, Any]] = {
    "dealer.information": {},
    "inventory.search": {"filters": {"make": ["Toyota"]}, "pagination": {"limit": 3}},
    "inventory.facets": {"filters": {}},
    "inventory.vehicle": {"vin": "4T1B11HK5KU000001"},
    "lead.submit": {
        "customer": {"first_name": "Ana", "last_name": "Lopez", "email": "ana@example.com"},
        "consent": {
            "granted_at": "2026-11-24T10:00:00Z",
            "allowed_channels": ["email"],
            "consent_text": "I agree that the dealership may e-mail me about this vehicle.",
            "source_agent": "shopping-assistant",
            "scope": ["lead_submission"],
        },
        "vehicle_of_interest": {"vin": "4T1B11HK5KU000001"},
        "message": "Is this car still available?",
        "source_agent": "shopping-assistant",
    },
}


def skill_action(skill: Skill) -> Action:
    """The gateway action for one AAP skill."""
    output = bundled(skill.response_schema)
    return Action(
        name=skill.action,
        type="tool.run",
        title=f"AAP: {skill.name}",
        description=(
            f"{skill.description} Takes and returns AAP v0.1 payloads unchanged "
            f"(request type {skill.request_type}, response type {skill.response_type}). {_USE[skill.id]}"
        ),
        input_schema=bundled(skill.request_schema),
        output_schema=output,
        adapter=ADAPTER_ID,
        scope=_SCOPES[skill.id],
        side_effect=skill.id == "lead.submit",
        idempotent=skill.id != "lead.submit",
        cacheable=skill.id in ("dealer.information", *_FOLLOWS_CHANGES),
        cache_follows_changes=skill.id in _FOLLOWS_CHANGES,
        cache_ttl_s=30.0 if skill.id in _FOLLOWS_CHANGES else 60.0,
        pii=skill.id == "lead.submit",
        timeout_s=10.0,
        dealer_scoped=True,
        anonymous_allowed=skill.anonymous_allowed,
        rate_budget=_TWINS[skill.id],
        domain="aap",
        tags=("aap", *skill.tags),
        # Only lead.submit writes; the other skills read, outside the SQLite write lock.
        store_reads_only=skill.id != "lead.submit",
        example=_EXAMPLES[skill.id],
    )


DELIVERY_STATUS = Action(
    name=DELIVERY_STATUS_ACTION,
    type="tool.run",
    title="Lead delivery status",
    description=(
        "Where a lead's deliveries stand: the ADF post to the dealership's CRM and any A2A push notifications "
        "(status pending/retrying/delivered/failed/no_endpoint, attempts, last error, delivered_at). Use it to "
        "confirm that a new lead reached the dealership."
    ),
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "dealership_id": {"type": "string", "minLength": 1, "maxLength": 128},
            "lead_id": {"type": "string", "minLength": 1, "maxLength": 128},
        },
        "required": ["lead_id"],
        "additionalProperties": False,
    },
    output_schema=None,
    adapter=ADAPTER_ID,
    scope="amcp:leads:read",
    pii=False,
    dealer_scoped=True,
    domain="leads",
    tags=("leads", "delivery"),
    example={"lead_id": "lead_tsf_0001"},
)


def register_aap_actions(catalogue: Catalogue) -> None:
    """Add the five ``aap.*`` skills, ``leads.delivery_status`` and ``aap.discover`` to ``catalogue``."""
    for skill in SKILLS:
        catalogue.add(skill_action(skill), _skill(HANDLERS[skill.action]))
    catalogue.add(DELIVERY_STATUS, _delivery_status)
    catalogue.add(DISCOVER, discover)
