"""The ``leads.*`` actions: list, get, create (through the one lead intake, :mod:`.lead_intake`), update."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.actions import leads_schemas as s
from forecourt.actions.base import Action, AdapterResult, ExecutionContext, Handler
from forecourt.actions.common import dealer_action, opt_str, require_dealership, result
from forecourt.actions.lead_intake import IntakeRules, LeadRequest, intake_lead
from forecourt.actions.lead_rules import check_lead_transition
from forecourt.actions.representations import lead_repr
from forecourt.contract.paging import next_cursor, open_page, page_output
from forecourt.domain.people import Channel, LeadStatus
from forecourt.errors import LeadNotFound

READ, WRITE = "amcp:leads:read", "amcp:leads:write"


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


def _request(payload: Mapping[str, Any], key: str | None) -> LeadRequest:
    contact: Mapping[str, Any] = payload["customer"]
    channel = contact.get("preferred_channel")
    return LeadRequest(
        first_name=str(contact.get("first_name", "")),
        last_name=str(contact.get("last_name", "")),
        email=contact.get("email"),
        phone=contact.get("phone"),
        postal_code=opt_str(contact, "postal_code"),
        preferred_channel=Channel(channel) if channel else None,
        interest=payload.get("vehicle_of_interest") or {},
        trade_in=payload.get("trade_in"),
        message=opt_str(payload, "message"),
        source_agent=opt_str(payload, "source_agent"),
        submitted_at=opt_str(payload, "submitted_at"),
        consent=payload.get("consent"),
        idempotency_key=key,
    )


async def leads_create(payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
    """Create a lead through the one lead intake (or return the one an idempotency key already created)."""
    dealership_id = require_dealership(ctx)
    key = opt_str(payload, "idempotency_key") or ctx.idempotency_key
    rules = IntakeRules(recorded_via=ctx.action.name, source=opt_str(payload, "source") or "agent")
    async with ctx.store.transaction() as uow:
        intake = await intake_lead(
            _request(payload, key),
            rules,
            dealership_id=dealership_id,
            uow=uow,
            now=ctx.now,
            trace_id=ctx.trace_id,
            caller=ctx.principal.member_id,
        )
    return result(lead_repr(intake.lead), replayed=intake.replayed)


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
            "List the dealership's sales leads, optionally only those with one `status` (new, duplicate, contacted, "
            "qualified, appointment_set, sold, lost, closed). Returns {items, next_cursor, total}; pass next_cursor "
            "back for the next page. Leads reference customers by customer_id; use customers.get for contact "
            "details. Use it to find leads to follow up, e.g. today's new ones."
        ),
        input=s.LIST_IN,
        output=s.LIST_OUT,
        scope=READ,
        tags=("leads",),
        example={"status": "new", "limit": 10},
    ),
    dealer_action(
        "leads.get",
        title="Get a lead",
        description=(
            "Fetch one lead by `lead_id`. Fails with leads.lead_not_found when it does not exist here. Use it to "
            "read one lead's details and status, e.g. after leads.list."
        ),
        input=s.GET_IN,
        output=s.LEAD_OUT,
        scope=READ,
        tags=("leads",),
        example={"lead_id": "lead_tsf_0001"},
    ),
    dealer_action(
        "leads.create",
        title="Create a lead",
        description=(
            "Record a buyer's interest: their contact details (e-mail or phone required), optionally the vehicle of "
            "interest (vehicle_id, VIN or stock number from inventory, or just year/make/model), a trade-in "
            "(mileage as {value, unit}), a message and their consent to be contacted (recorded as a consent grant; "
            "its scope must include lead_submission). The customer is matched by e-mail and name, or created "
            "(flagged possible_duplicate_of when another customer shares the e-mail or phone). The lead is queued "
            "for the dealership's CRM as ADF. The same contact asking about the same vehicle within 24 h gives "
            "status `duplicate` with `duplicate_of`. Retrying with the same idempotency_key within 24 h returns the "
            "original lead. A sold or removed vehicle fails with inventory.vehicle_unavailable. Use it when a buyer "
            "asks to be contacted or shows interest in a vehicle."
        ),
        input=s.CREATE_IN,
        output=s.LEAD_OUT,
        scope=WRITE,
        side_effect=True,
        idempotent=False,
        timeout_s=10.0,
        tags=("leads", "consent"),
        example={
            "customer": {"first_name": "Ana", "email": "ana@example.com"},
            "message": "Is the RAV4 still available?",
        },
    ),
    dealer_action(
        "leads.update",
        title="Update a lead",
        description=(
            "Change a lead's `status`, `assigned_to` (a team member id, or null to unassign) or `message`. Status "
            "follows the lifecycle new → contacted → qualified → appointment_set → sold/lost "
            "→ closed (a closed lead stays closed); a disallowed move fails with "
            "leads.invalid_status_transition. Use it to record progress after contacting the customer."
        ),
        input=s.UPDATE_IN,
        output=s.LEAD_OUT,
        scope=WRITE,
        side_effect=True,
        idempotent=True,
        timeout_s=10.0,
        tags=("leads",),
        example={"lead_id": "lead_tsf_0001", "status": "contacted"},
    ),
)

HANDLERS: dict[str, Handler] = {
    "leads.list": leads_list,
    "leads.get": leads_get,
    "leads.create": leads_create,
    "leads.update": leads_update,
}
