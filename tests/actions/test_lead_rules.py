"""Lead rules: contact normalisation, duplicate fingerprints and status transitions."""

from __future__ import annotations

import pytest

from forecourt.actions import lead_rules as r
from forecourt.domain.people import ConsentStatus, LeadStatus
from forecourt.errors import all_error_classes


def test_phone_numbers_in_different_formats_normalise_to_one_e164_number() -> None:
    assert r.normalise_phone("(415) 555-0134") == "+14155550134"
    assert r.normalise_phone("+1 415 555 0134") == "+14155550134"
    assert r.normalise_phone("0044 20 7946 0958") == "+442079460958"
    assert r.normalise_phone("  ") is None


def test_emails_are_trimmed_and_lower_cased() -> None:
    assert r.normalise_email("  Ana.Lopez@Example.COM ") == "ana.lopez@example.com"
    assert r.normalise_email("") is None


def test_the_same_person_about_the_same_vehicle_gets_the_same_fingerprint() -> None:
    a = r.lead_fingerprint("d1", "ANA@example.com", None, r.vehicle_key("veh-1", {}))
    b = r.lead_fingerprint("d1", " ana@example.com", "+1 415 555 0134", r.vehicle_key("veh-1", {}))
    assert a == b
    assert "ana" not in a


def test_another_vehicle_or_dealership_changes_the_fingerprint() -> None:
    base = r.lead_fingerprint("d1", "ana@example.com", None, r.vehicle_key("veh-1", {}))
    assert base != r.lead_fingerprint("d1", "ana@example.com", None, r.vehicle_key("veh-2", {}))
    assert base != r.lead_fingerprint("d2", "ana@example.com", None, r.vehicle_key("veh-1", {}))


def test_the_vehicle_key_falls_back_from_id_to_vin_to_year_make_model() -> None:
    assert r.vehicle_key(None, {"vin": "4t1bf1fk0ku000001"}) == "vin:4T1BF1FK0KU000001"
    assert r.vehicle_key(None, {"year": 2024, "make": "Honda", "model": "CR-V"}) == "ymm:2024|honda|cr-v|"
    assert r.vehicle_key(None, {}) == "none"


def test_a_new_lead_can_be_contacted_and_a_closed_lead_cannot_be_reopened() -> None:
    r.check_lead_transition(LeadStatus.NEW, LeadStatus.CONTACTED)
    r.check_lead_transition(LeadStatus.CLOSED, LeadStatus.CLOSED)
    with pytest.raises(r.InvalidLeadTransition) as info:
        r.check_lead_transition(LeadStatus.CLOSED, LeadStatus.NEW)
    assert info.value.code == "leads.invalid_status_transition"
    assert info.value.details == {"from": "closed", "to": "new"}


def test_only_granted_consent_can_be_revoked() -> None:
    r.check_consent_transition(ConsentStatus.GRANTED, ConsentStatus.REVOKED)
    r.check_consent_transition(ConsentStatus.REVOKED, ConsentStatus.REVOKED)
    with pytest.raises(r.InvalidConsentTransition) as info:
        r.check_consent_transition(ConsentStatus.REVOKED, ConsentStatus.GRANTED)
    assert info.value.code == "consent.invalid_status_transition"


def test_the_new_error_codes_are_unique_across_the_codebase() -> None:
    codes = [cls.code for cls in all_error_classes()]
    assert codes.count(r.InvalidLeadTransition.code) == 1
    assert codes.count(r.InvalidConsentTransition.code) == 1
