"""ADF 1.0 (Auto-lead Data Format) XML for a lead, the format dealers' CRMs ingest.

Mapping (SPEC-NOTES): ``<adf><prospect><requestdate/><vehicle interest=... status=...>`` for the
vehicle of interest (``cpo`` → ``status="used"`` plus a comment) and ``interest="trade-in"`` for the
trade-in, ``<customer><contact><name part=.../><email/><phone/><address/></contact><comments/>``,
``<vendor>`` (the dealership) and ``<provider>`` (the buyer agent via Forecourt). Built with
:mod:`xml.etree.ElementTree`, so every value is escaped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from forecourt.domain.money import Money
from forecourt.domain.people import ConsentGrant, Customer, Lead
from forecourt.domain.service import Appointment
from forecourt.domain.tenancy import Dealership
from forecourt.domain.timeutil import rfc3339

_STATUS = {"new": "new", "used": "used", "cpo": "used"}
_PRICE_TYPES = {"price": "quote", "list_price": "asking", "msrp": "msrp", "offered_price": "offer"}


def _text(parent: ET.Element, tag: str, value: Any, **attrs: str) -> ET.Element | None:
    if value is None or value == "":
        return None
    el = ET.SubElement(parent, tag, attrs)
    el.text = str(value)
    return el


def _money_text(value: Any) -> tuple[str, str] | None:
    if isinstance(value, Mapping) and "amount" in value:
        currency = str(value.get("currency") or "USD")
        money = Money.from_major(value["amount"], currency)
        return str(money.to_major()), currency
    return None


def _odometer(vehicle: ET.Element, mileage: Any) -> None:
    """``<odometer units="mi|km">`` (ADF 1.0's units are ``km`` or ``mi``)."""
    if mileage is None:
        return
    units = "mi"
    if isinstance(mileage, Mapping):
        units = "km" if str(mileage.get("unit") or "mi").lower().startswith("k") else "mi"
        mileage = mileage.get("value")
    _text(vehicle, "odometer", mileage, status="original", units=units)


def _vehicle(prospect: ET.Element, data: Mapping[str, Any], *, interest: str) -> None:
    attrs = {"interest": interest}
    condition = str(data.get("condition") or "")
    if interest != "trade-in" and condition in _STATUS:
        attrs["status"] = _STATUS[condition]
    vehicle = ET.SubElement(prospect, "vehicle", attrs)
    for tag in ("year", "make", "model", "vin", "stock", "trim"):
        _text(vehicle, tag, data.get(tag))
    _text(vehicle, "bodystyle", data.get("body"))
    _text(vehicle, "transmission", data.get("transmission"))
    _odometer(vehicle, data.get("mileage"))
    if interest == "trade-in" and condition:
        _text(vehicle, "condition", condition)
    for key, kind in _PRICE_TYPES.items():
        money = _money_text(data.get(key))
        if money is not None:
            _text(vehicle, "price", money[0], type=kind, currency=money[1])
    if condition == "cpo":
        _text(vehicle, "comments", "Certified pre-owned (cpo).")


def _contact(parent: ET.Element, customer: Customer, address: Mapping[str, Any] | None, preferred: str | None) -> None:
    contact = ET.SubElement(parent, "contact", {"primarycontact": "1"})
    _text(contact, "name", customer.first_name, part="first")
    _text(contact, "name", customer.last_name, part="last")
    _text(contact, "name", customer.full_name, part="full")
    email_attrs = {"preferredcontact": "1"} if preferred == "email" else {}
    _text(contact, "email", customer.email, **email_attrs)
    phone_attrs = {"type": "voice"}
    if preferred in ("phone", "sms"):
        phone_attrs["preferredcontact"] = "1"
    _text(contact, "phone", customer.phone, **phone_attrs)
    if address:
        addr = ET.SubElement(contact, "address")
        if not _text(addr, "street", address.get("address_line_1"), line="1"):
            ET.SubElement(addr, "street", {"line": "1"})  # ADF requires a street; only the city or ZIP is known
        _text(addr, "street", address.get("address_line_2"), line="2")
        _text(addr, "city", address.get("city"))
        _text(addr, "regioncode", address.get("state"))
        _text(addr, "postalcode", address.get("zip"))
        _text(addr, "country", "US")


def _comments(lead: Lead, consent: ConsentGrant | None, appointment: Appointment | None, notes: str | None) -> str:
    lines = []
    if lead.message:
        lines.append(lead.message)
    if appointment is not None:
        lines.append(
            f"Appointment {appointment.kind.value} {appointment.status.value}: "
            f"{rfc3339(appointment.start)} to {rfc3339(appointment.end)} (id {appointment.id})."
        )
    if notes:
        lines.append(f"Appointment notes: {notes}")
    if consent is not None:
        channels = ", ".join(c.value for c in consent.allowed_channels)
        lines.append(f"Consent ({', '.join(consent.scope)}) granted {rfc3339(consent.granted_at)} for: {channels}.")
    if lead.duplicate_of:
        lines.append(f"Possible duplicate of lead {lead.duplicate_of}.")
    return "\n".join(lines)


def render_adf(
    lead: Lead,
    customer: Customer,
    dealer: Dealership,
    *,
    consent: ConsentGrant | None = None,
    appointment: Appointment | None = None,
    address: Mapping[str, Any] | None = None,
    preferred_contact: str | None = None,
    appointment_notes: str | None = None,
) -> str:
    """The lead as an ADF 1.0 XML document (UTF-8 text with the ``<?adf version="1.0"?>`` instruction).

    Indented two spaces per level, so a person reading a CRM inbox or ``forecourt crm sink`` can follow it;
    leaf text (comments included) is kept exactly as written.
    """
    adf = ET.Element("adf")
    prospect = ET.SubElement(adf, "prospect", {"status": "resend" if lead.duplicate_of else "new"})
    _text(prospect, "id", lead.id, sequence="1", source="forecourt")
    _text(prospect, "requestdate", rfc3339(lead.submitted_at))
    interest = "test-drive" if appointment is not None and appointment.kind.value == "test_drive" else "buy"
    if lead.vehicle_of_interest:
        _vehicle(prospect, lead.vehicle_of_interest, interest=interest)
    if lead.trade_in:
        _vehicle(prospect, lead.trade_in, interest="trade-in")
    if not lead.vehicle_of_interest and not lead.trade_in:
        # ADF requires a vehicle; a general inquiry names none, so year, make and model stay empty.
        vehicle = ET.SubElement(prospect, "vehicle", {"interest": interest})
        for tag in ("year", "make", "model"):
            ET.SubElement(vehicle, tag).text = ""
    cust = ET.SubElement(prospect, "customer")
    _contact(cust, customer, address, preferred_contact)
    _text(cust, "comments", _comments(lead, consent, appointment, appointment_notes))
    vendor = ET.SubElement(prospect, "vendor")
    _text(vendor, "id", dealer.id, source="forecourt")
    _text(vendor, "vendorname", dealer.name)
    vcontact = ET.SubElement(vendor, "contact")
    _text(vcontact, "name", dealer.name, part="full")
    _text(vcontact, "email", dealer.email)
    _text(vcontact, "phone", dealer.phones.get("sales"), type="voice")
    provider = ET.SubElement(prospect, "provider")
    _text(provider, "name", f"Forecourt AAP dealer agent ({lead.source_agent or 'buyer agent'})", part="full")
    _text(provider, "service", lead.source_agent or "aap")
    ET.indent(adf, space="  ")
    body = ET.tostring(adf, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<?adf version="1.0"?>\n{body}\n'
