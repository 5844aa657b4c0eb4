"""A lead's delivery status and ADF text for operators (``admin.leads.report``, the console, ``forecourt leads``).

The one view of a delivery (:func:`delivery_view`) and of a lead's ADF (:func:`lead_adf`): the console's lead
page (``actions/console_leads.py``) and ``admin.leads.report`` both answer with them.
"""

from __future__ import annotations

from typing import Any

from forecourt.actions.adf import render_adf
from forecourt.actions.representations import ts
from forecourt.domain.people import Lead
from forecourt.errors import LeadNotFound
from forecourt.store.base import Delivery, Store, UnitOfWork

CRM_KIND = "crm_adf"


async def _find(uow: UnitOfWork, lead_id: str, dealership_id: str | None) -> Lead:
    ids = [dealership_id] if dealership_id else [d.id for d in await uow.tenancy.list_dealerships()]
    for d in ids:
        lead = await uow.leads.get(d, lead_id)
        if lead is not None:
            return lead
    raise LeadNotFound()


async def lead_report(store: Store, lead_id: str, dealership_id: str | None = None) -> dict[str, Any]:
    """The lead's status and every delivery about it (no bodies: they carry PII)."""
    async with store.transaction() as uow:
        lead = await _find(uow, lead_id, dealership_id)
        deliveries = await uow.deliveries.list_for(lead.id)
    return {
        "lead_id": lead.id,
        "dealership_id": lead.dealership_id,
        "status": lead.status.value,
        "source": lead.source,
        "source_agent": lead.source_agent,
        "duplicate_of": lead.duplicate_of,
        "appointment_id": lead.appointment_id,
        "created_at": ts(lead.created_at),
        "deliveries": [delivery_view(d) for d in deliveries if d.dealership_id == lead.dealership_id],
    }


def delivery_view(d: Delivery) -> dict[str, Any]:
    """A delivery as operators see it (``admin.leads.report``, the console's lead page): never its body."""
    return {
        "id": d.id,
        "kind": d.kind,
        "target": d.target,
        "status": d.status,
        "attempts": d.attempts,
        "next_attempt_at": ts(d.next_attempt_at),
        "last_error": d.last_error,
        "delivered_at": ts(d.delivered_at),
    }


async def lead_adf(store: Store, lead_id: str, dealership_id: str | None = None) -> str:
    """The ADF XML sent (or to be sent) to the CRM; rendered from the stored lead when none was queued."""
    async with store.transaction() as uow:
        lead = await _find(uow, lead_id, dealership_id)
        for d in await uow.deliveries.list_for(lead.id):
            if d.kind == CRM_KIND and d.dealership_id == lead.dealership_id:
                return d.body
        dealer = await uow.tenancy.get_dealership(lead.dealership_id)
        customer = await uow.customers.get(lead.dealership_id, lead.customer_id) if lead.customer_id else None
        consent = await uow.consent.get(lead.dealership_id, lead.consent_id) if lead.consent_id else None
        appt = (
            await uow.service.get_appointment(lead.dealership_id, lead.appointment_id) if lead.appointment_id else None
        )
    if dealer is None or customer is None:
        raise LeadNotFound()
    return render_adf(lead, customer, dealer, consent=consent, appointment=appt)
