"""The ADF a CRM receives: valid against the ADF 1.0 DTD, indented, every value intact."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lxml import etree

from forecourt.actions.adf import render_adf
from forecourt.domain.people import Channel, ConsentGrant, Customer, Lead
from forecourt.domain.service import Appointment, AppointmentKind, AppointmentStatus
from forecourt.domain.tenancy import Dealership

DTD = etree.DTD(str(Path(__file__).with_name("adf-1.0.dtd")))
NOW = datetime(2026, 11, 20, 15, 30, tzinfo=UTC)
DEALER = Dealership(id="d1", company_id="c", name="Demo Toyota", email="sales@dealer.example",
                    phones={"sales": "+14155550100"})  # fmt: skip
CUSTOMER = Customer(id="cust_1", dealership_id="d1", first_name="Zoë <&>", last_name="O'Brien",
                    email="zoe@example.com", phone="+14155550123", created_at=NOW, updated_at=NOW)  # fmt: skip


def _lead(**overrides: object) -> Lead:
    values: dict[str, object] = {
        "id": "lead_1", "dealership_id": "d1", "customer_id": "cust_1", "source": "aap", "source_agent": "shopper",
        "vehicle_of_interest": {"vin": "4T1DAACKXSU100101", "stock": "T1001", "year": 2025, "make": "Toyota",
                                "model": "Camry", "trim": "XLE", "condition": "cpo",
                                "price": {"amount": 34995, "currency": "USD"}},
        "trade_in": {"year": 2018, "make": "Honda", "model": "Civic", "condition": "good",
                     "mileage": {"value": 82000, "unit": "km"}},
        "message": "Is it still available?\nCan I test drive Saturday?",
        "submitted_at": NOW, "created_at": NOW, "updated_at": NOW,
    }  # fmt: skip
    values.update(overrides)
    return Lead.model_validate(values)


def _validate(text: str) -> etree._Element:
    body = text.split("?>", 2)[-1].strip().encode()
    root = etree.fromstring(body)
    assert DTD.validate(root), DTD.error_log.filter_from_errors()
    return root


def test_a_full_lead_is_valid_adf_1_0_with_trade_in_appointment_consent_and_a_zip_only_address() -> None:
    consent = ConsentGrant(
        id="cons_1", dealership_id="d1", customer_id="cust_1", lead_id="lead_1", scope=("lead_submission",),
        allowed_channels=(Channel.EMAIL, Channel.PHONE), granted_at=NOW, source_agent="shopper", created_at=NOW,
    )  # fmt: skip
    appointment = Appointment(
        id="appt_1", dealership_id="d1", kind=AppointmentKind.TEST_DRIVE, status=AppointmentStatus.CONFIRMED,
        start=NOW + timedelta(days=1), end=NOW + timedelta(days=1, hours=1), created_at=NOW, updated_at=NOW,
    )  # fmt: skip
    text = render_adf(_lead(), CUSTOMER, DEALER, consent=consent, appointment=appointment,
                      address={"zip": "94107"}, preferred_contact="email")  # fmt: skip
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<?adf version="1.0"?>\n<adf>\n  <prospect')
    root = _validate(text)
    assert root.findtext("prospect/customer/contact/name[@part='first']") == "Zoë <&>"
    assert root.find("prospect/vehicle[@interest='trade-in']/odometer").get("units") == "km"  # type: ignore[union-attr]
    assert root.findtext("prospect/customer/contact/address/postalcode") == "94107"
    comments = root.findtext("prospect/customer/comments") or ""
    assert comments.startswith("Is it still available?\nCan I test drive Saturday?\n")


def test_a_minimal_lead_is_valid_adf_1_0() -> None:
    _validate(render_adf(_lead(trade_in=None, message=None), CUSTOMER.model_copy(update={"phone": None}), DEALER))


def test_a_general_inquiry_without_a_vehicle_is_valid_adf_1_0() -> None:
    root = _validate(render_adf(_lead(vehicle_of_interest={}, trade_in=None), CUSTOMER, DEALER))
    assert root.find("prospect/vehicle[@interest='buy']/year") is not None


def test_the_adf_is_indented_two_spaces_per_level_with_one_element_per_line() -> None:
    text = render_adf(_lead(message="one line"), CUSTOMER, DEALER)
    lines = text.splitlines()[2:]
    depth = 0
    for line in lines:
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if stripped.startswith("</"):
            depth -= 1
        assert indent == 2 * depth, line
        if not stripped.startswith("</") and not stripped.endswith("/>") and "</" not in stripped:
            depth += 1
    assert depth == 0
    assert ET.tostring(ET.fromstring(text.split("?>", 2)[-1]), encoding="unicode").count("<vehicle") == 2
