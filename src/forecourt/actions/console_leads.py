"""The console's leads and deliveries: recent leads (personal data masked unless revealed), ADF preview,
delivery attempts and "retry now".

Revealing is an argument (``reveal: true``), so the audit record of the call says who revealed what and when.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from forecourt.actions.base import Action, AdapterResult, Catalogue, ExecutionContext
from forecourt.actions.console_common import DEALERSHIP, SHORT, console_action, one_dealership, require_admin
from forecourt.actions.lead_delivery import delivery_view, lead_adf
from forecourt.actions.representations import ts
from forecourt.domain.people import Customer, Lead
from forecourt.errors import LeadNotFound, NotFound
from forecourt.store import console as queries

ADAPTER_ID = "console_leads"

LEAD_ACTIONS: tuple[Action, ...] = (
    console_action(
        "console.leads.show",
        "One lead: its customer (masked unless revealed), delivery attempts and the ADF sent to the CRM.",
        {"dealership_id": DEALERSHIP, "lead_id": SHORT, "reveal": {"type": "boolean"}},
        ["dealership_id", "lead_id"],
        adapter=ADAPTER_ID,
        write=False,
    ),
    console_action(
        "console.deliveries.retry",
        "Make an undelivered CRM delivery due now (also one that gave up).",
        {"dealership_id": DEALERSHIP, "delivery_id": SHORT},
        ["dealership_id", "delivery_id"],
        adapter=ADAPTER_ID,
        write=True,
    ),
)


def mask(value: str | None) -> str | None:
    """``jane@example.com`` → ``j***@e***.com``; ``+14155550100`` → ``•••0100``; names → ``J.``."""
    if not value:
        return value
    if "@" in value:
        local, _, domain = value.partition("@")
        head, _, tld = domain.rpartition(".")
        return f"{local[:1]}***@{head[:1]}***.{tld}" if head else f"{local[:1]}***@***"
    digits = re.sub(r"\D", "", value)
    if len(digits) >= 7 and len(digits) >= len(value) // 2:
        return "•••" + digits[-4:]
    return value[:1] + "."


def _customer(customer: Customer | None, reveal: bool) -> dict[str, Any] | None:
    if customer is None:
        return None
    show = (lambda v: v) if reveal else mask
    return {
        "id": customer.id,
        "first_name": show(customer.first_name),
        "last_name": show(customer.last_name),
        "email": show(customer.email),
        "phone": show(customer.phone),
        "postal_code": customer.postal_code if reveal else None,
    }


def _lead(lead: Lead, customer: Customer | None, reveal: bool) -> dict[str, Any]:
    vehicle = lead.vehicle_of_interest or {}
    return {
        "id": lead.id,
        "dealership_id": lead.dealership_id,
        "status": lead.status.value,
        "source": lead.source,
        "source_agent": lead.source_agent,
        "vehicle": " ".join(str(vehicle.get(k, "")) for k in ("year", "make", "model") if vehicle.get(k)),
        "message": lead.message if reveal else ("•••" if lead.message else None),
        "customer": _customer(customer, reveal),
        "created_at": ts(lead.created_at),
        "revealed": reveal,
    }


def lead_row(row: Mapping[str, Any], *, reveal: bool) -> dict[str, Any]:
    """A row of ``store.console_pages`` (a lead joined to its customer) as the console's leads table shows it."""
    vehicle = row.get("vehicle_of_interest") or {}
    show = (lambda v: v) if reveal else mask
    created = row.get("created_at")
    return {
        "id": row["id"],
        "dealership_id": row["dealership_id"],
        "status": row["status"],
        "source": row["source"],
        "source_agent": row.get("source_agent"),
        "vehicle": " ".join(str(vehicle.get(k, "")) for k in ("year", "make", "model") if vehicle.get(k)),
        "message": row.get("message") if reveal else ("•••" if row.get("message") else None),
        "customer": {
            "id": row["customer_id"],
            "first_name": show(row.get("first_name")),
            "last_name": show(row.get("last_name")),
            "email": show(row.get("email")),
            "phone": show(row.get("phone")),
        }
        if row.get("customer_id")
        else None,
        "created_at": created if isinstance(created, str) or created is None else ts(created),
        "revealed": reveal,
    }


def _mask_adf(body: str) -> str:
    """The ADF with the contact's name, email and phone elements masked."""
    body = re.sub(r"(<name part=\"(?:first|last|full)\"[^>]*>)([^<]*)(</name>)", lambda m: m[1] + "•••" + m[3], body)
    body = re.sub(r"(<email[^>]*>)([^<]*)(</email>)", lambda m: m[1] + (mask(m[2]) or "") + m[3], body)
    return re.sub(r"(<phone[^>]*>)([^<]*)(</phone>)", lambda m: m[1] + (mask(m[2]) or "") + m[3], body)


class ConsoleLeads:
    """The ``console_leads`` adapter."""

    id = ADAPTER_ID

    def __init__(self) -> None:
        self._handlers: dict[str, Callable[[Mapping[str, Any], ExecutionContext], Awaitable[Any]]] = {
            "console.leads.show": self._show,
            "console.deliveries.retry": self._retry,
        }

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Check the caller administers the company and may see the rooftop, then answer."""
        company_id = str(payload["company_id"])
        require_admin(context, company_id)
        await one_dealership(context.store, context, company_id, str(payload["dealership_id"]))
        return AdapterResult(output=await self._handlers[context.action.name](payload, context))

    async def _show(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:

        dealership_id = str(payload["dealership_id"])
        reveal = bool(payload.get("reveal", False))
        async with ctx.store.read() as uow:
            lead = await uow.leads.get(dealership_id, str(payload["lead_id"]))
            if lead is None:
                raise LeadNotFound()
            customer = await uow.customers.get(dealership_id, lead.customer_id) if lead.customer_id else None
            attempts = [d for d in await uow.deliveries.list_for(lead.id) if d.dealership_id == dealership_id]
        try:
            adf = await lead_adf(ctx.store, lead.id, dealership_id)
        except LeadNotFound:
            adf = ""
        return {
            **_lead(lead, customer, reveal),
            "adf": adf if reveal else _mask_adf(adf),
            "deliveries": [delivery_view(d) for d in attempts],
        }

    async def _retry(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> Any:
        delivery_id = str(payload["delivery_id"])
        if not await queries.retry_delivery(ctx.store, delivery_id, [str(payload["dealership_id"])], ctx.now):
            raise NotFound("No undelivered delivery with that id at this rooftop.")
        return {"delivery_id": delivery_id, "status": "pending", "next_attempt_at": ts(ctx.now)}


def register_console_leads(catalogue: Catalogue) -> None:
    """Add the console's lead and delivery actions and their adapter."""
    for action in LEAD_ACTIONS:
        catalogue.add(action)
    catalogue.add_adapter(ConsoleLeads())
