"""consent.* through the dealer-data adapter on SQLite: grants are kept, only revoked."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from forecourt.errors import ForecourtError

from .builders import NOW
from .conftest import Harness


async def a_customer(harness: Harness) -> dict[str, Any]:
    lead: dict[str, Any] = await harness.call(
        "leads.create", {"customer": {"first_name": "Ana", "email": "ana@example.com"}}
    )
    return lead


async def test_create_records_consent_for_a_customer_and_list_filters_by_customer(harness: Harness) -> None:
    lead = await a_customer(harness)
    grant = await harness.call(
        "consent.create",
        {"customer_id": lead["customer_id"], "scope": ["marketing"], "allowed_channels": ["sms"]},
    )
    assert (grant["status"], grant["scope"], grant["lead_id"]) == ("granted", ["marketing"], None)
    listed = await harness.call("consent.list", {"customer_id": lead["customer_id"]})
    assert [g["id"] for g in listed["items"]] == [grant["id"]]
    assert (await harness.call("consent.list", {"customer_id": "someone-else"}))["items"] == []


async def test_consent_given_for_a_lead_is_attached_to_the_leads_customer(harness: Harness) -> None:
    lead = await a_customer(harness)
    grant = await harness.call(
        "consent.create", {"lead_id": lead["id"], "scope": ["service_updates"], "allowed_channels": ["email"]}
    )
    assert (grant["lead_id"], grant["customer_id"]) == (lead["id"], lead["customer_id"])


async def test_consent_for_an_unknown_customer_or_lead_is_not_found(harness: Harness) -> None:
    for payload, code in (
        ({"customer_id": "nobody"}, "customers.customer_not_found"),
        ({"lead_id": "no-lead"}, "leads.lead_not_found"),
    ):
        with pytest.raises(ForecourtError) as info:
            await harness.call("consent.create", {**payload, "scope": ["marketing"], "allowed_channels": ["email"]})
        assert info.value.code == code


async def test_consent_that_already_expired_cannot_be_recorded(harness: Harness) -> None:
    lead = await a_customer(harness)
    with pytest.raises(ForecourtError) as info:
        await harness.call(
            "consent.create",
            {
                "customer_id": lead["customer_id"],
                "scope": ["marketing"],
                "allowed_channels": ["email"],
                "expires_at": (NOW - timedelta(minutes=1)).isoformat(),
            },
        )
    assert info.value.code == "consent.invalid_consent"


async def test_revoking_keeps_the_record_with_its_revocation_time(harness: Harness) -> None:
    lead = await a_customer(harness)
    grant = await harness.call(
        "consent.create", {"customer_id": lead["customer_id"], "scope": ["marketing"], "allowed_channels": ["email"]}
    )
    later = NOW + timedelta(hours=1)
    revoked = await harness.call(
        "consent.update", {"consent_id": grant["id"], "status": "revoked", "reason": "asked to stop"}, now=later
    )
    assert (revoked["status"], revoked["revoked_at"]) == ("revoked", later.isoformat())
    again = await harness.call("consent.update", {"consent_id": grant["id"], "status": "revoked"})
    assert again == (await harness.call("consent.get", {"consent_id": grant["id"]}))
    assert again["revoked_at"] == later.isoformat()


async def test_an_expired_grant_reads_as_expired_and_cannot_be_revoked(harness: Harness) -> None:
    lead = await a_customer(harness)
    grant = await harness.call(
        "consent.create",
        {
            "customer_id": lead["customer_id"],
            "scope": ["marketing"],
            "allowed_channels": ["email"],
            "expires_at": (NOW + timedelta(days=1)).isoformat(),
        },
    )
    after = NOW + timedelta(days=2)
    assert (await harness.call("consent.get", {"consent_id": grant["id"]}, now=after))["status"] == "expired"
    with pytest.raises(ForecourtError) as info:
        await harness.call("consent.update", {"consent_id": grant["id"], "status": "revoked"}, now=after)
    assert info.value.code == "consent.invalid_status_transition"


async def test_an_unknown_consent_is_not_found(harness: Harness) -> None:
    with pytest.raises(ForecourtError) as info:
        await harness.call("consent.get", {"consent_id": "missing"})
    assert info.value.code == "consent.consent_not_found"
