"""leads.* and customers.* through the dealer-data adapter on SQLite."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from forecourt.domain.vehicle import VehicleStatus
from forecourt.errors import ForecourtError

from .builders import NOW, OTHER, vehicle
from .conftest import Harness

CONSENT = {"scope": ["lead_submission"], "allowed_channels": ["email", "phone"], "consent_text": "You may contact me."}


def lead_payload(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "customer": {"first_name": "Ana", "last_name": "Lopez", "email": "Ana.Lopez@example.com"},
        "vehicle_of_interest": {"vehicle_id": vehicle(1).id},
        "trade_in": {"year": 2018, "make": "Honda", "model": "Civic", "mileage": {"value": 61000}, "condition": "good"},
        "message": "Is it still available?",
        "consent": CONSENT,
        "source_agent": "shopper-assistant",
    }
    body.update(overrides)
    return body


async def stock(harness: Harness) -> None:
    async with harness.store.transaction() as uow:
        await uow.inventory.upsert(vehicle(1))
        await uow.inventory.upsert(vehicle(2, status=VehicleStatus.SOLD))


async def test_create_records_a_new_lead_a_customer_and_a_consent_grant(harness: Harness) -> None:
    await stock(harness)
    lead = await harness.call("leads.create", lead_payload())
    assert lead["status"] == "new"
    assert lead["vehicle_id"] == vehicle(1).id
    assert lead["vehicle_of_interest"]["vin"] == vehicle(1).vin
    assert lead["duplicate_of"] is None
    customer = await harness.call("customers.get", {"customer_id": lead["customer_id"]})
    assert customer["email"] == "ana.lopez@example.com"
    grant = await harness.call("consent.get", {"consent_id": lead["consent_id"]})
    assert (grant["lead_id"], grant["status"], grant["allowed_channels"]) == (lead["id"], "granted", ["email", "phone"])
    assert grant["consent_text"] == "You may contact me."


async def test_the_same_contact_about_the_same_vehicle_within_a_day_is_a_duplicate(harness: Harness) -> None:
    await stock(harness)
    first = await harness.call("leads.create", lead_payload())
    second = await harness.call(
        "leads.create",
        lead_payload(customer={"first_name": "Ana", "email": " ana.lopez@EXAMPLE.com"}),
        now=NOW + timedelta(hours=3),
    )
    assert (second["status"], second["duplicate_of"]) == ("duplicate", first["id"])
    assert second["customer_id"] == first["customer_id"]
    later = await harness.call("leads.create", lead_payload(), now=NOW + timedelta(hours=28))
    assert later["status"] == "new"


async def test_another_vehicle_from_the_same_contact_is_not_a_duplicate(harness: Harness) -> None:
    await stock(harness)
    await harness.call("leads.create", lead_payload())
    other = await harness.call("leads.create", lead_payload(vehicle_of_interest={"year": 2024, "make": "Toyota"}))
    assert other["status"] == "new"


async def test_the_same_email_and_name_reuse_the_customer_and_fill_in_a_new_phone(harness: Harness) -> None:
    await stock(harness)
    first = await harness.call("leads.create", lead_payload(customer={"first_name": "Bo", "email": "bo@example.com"}))
    again = await harness.call(
        "leads.create",
        lead_payload(customer={"first_name": "BO", "phone": "+1 415 555 0134", "email": "Bo@Example.com"}),
    )
    assert again["customer_id"] == first["customer_id"]
    customer = await harness.call("customers.get", {"customer_id": first["customer_id"]})
    assert (customer["phone"], customer["email"]) == ("+14155550134", "bo@example.com")


async def test_a_stranger_sharing_a_phone_gets_a_new_customer_flagged_as_a_possible_duplicate(harness: Harness) -> None:
    await stock(harness)
    first = await harness.call("leads.create", lead_payload(customer={"first_name": "Bo", "phone": "(415) 555-0134"}))
    stranger = await harness.call(
        "leads.create",
        lead_payload(customer={"first_name": "Mallory", "phone": "+1 415 555 0134", "email": "m@example.com"}),
    )
    assert stranger["customer_id"] != first["customer_id"]
    flagged = await harness.call("customers.get", {"customer_id": stranger["customer_id"]})
    assert flagged["possible_duplicate_of"] == first["customer_id"]
    original = await harness.call("customers.get", {"customer_id": first["customer_id"]})
    assert (original["first_name"], original["email"]) == ("Bo", None)  # nothing of the stranger's attached


async def test_the_same_email_under_another_name_is_not_merged(harness: Harness) -> None:
    await stock(harness)
    first = await harness.call("leads.create", lead_payload())
    other = await harness.call(
        "leads.create",
        lead_payload(customer={"first_name": "Eve", "last_name": "Lopez", "email": "ana.lopez@example.com"}),
    )
    assert other["customer_id"] != first["customer_id"]
    grant = await harness.call("consent.get", {"consent_id": other["consent_id"]})
    assert grant["customer_id"] == other["customer_id"]


async def test_every_lead_is_queued_for_the_crm_as_adf(harness: Harness) -> None:
    await stock(harness)
    lead = await harness.call("leads.create", lead_payload())
    async with harness.store.transaction() as uow:
        deliveries = await uow.deliveries.list_for(lead["id"])
    assert [(d.kind, d.content_type) for d in deliveries] == [("crm_adf", "application/xml")]
    assert "<adf>" in deliveries[0].body.replace("\n", "")


async def test_the_same_idempotency_key_within_a_day_returns_the_original_lead(harness: Harness) -> None:
    await stock(harness)
    first = await harness.call("leads.create", lead_payload(idempotency_key="key-1"))
    again = await harness.call("leads.create", lead_payload(idempotency_key="key-1"), now=NOW + timedelta(hours=1))
    assert again == first
    page = await harness.call("leads.list", {})
    assert page["total"] == 1


async def test_the_gateway_idempotency_key_is_used_when_the_payload_has_none(harness: Harness) -> None:
    await stock(harness)
    first = await harness.call("leads.create", lead_payload(), idempotency_key="gw-1")
    again = await harness.call("leads.create", lead_payload(), idempotency_key="gw-1")
    assert again["id"] == first["id"]


async def test_an_idempotency_key_reused_for_another_request_is_a_conflict(harness: Harness) -> None:
    await stock(harness)
    await harness.call("leads.create", lead_payload(idempotency_key="key-1"))
    with pytest.raises(ForecourtError) as info:
        await harness.call(
            "leads.create", lead_payload(idempotency_key="key-1", customer={"first_name": "Zed", "email": "z@x.io"})
        )
    assert info.value.code == "idempotency_conflict"


async def test_a_lead_on_a_sold_vehicle_is_vehicle_unavailable(harness: Harness) -> None:
    await stock(harness)
    with pytest.raises(ForecourtError) as info:
        await harness.call("leads.create", lead_payload(vehicle_of_interest={"vin": vehicle(2).vin}))
    assert info.value.code == "inventory.vehicle_unavailable"
    assert "email" not in str(info.value.details)
    assert (await harness.call("customers.list", {}))["total"] == 0


async def test_a_lead_on_an_unknown_vehicle_id_is_vehicle_not_found(harness: Harness) -> None:
    with pytest.raises(ForecourtError) as info:
        await harness.call("leads.create", lead_payload(vehicle_of_interest={"vehicle_id": "veh-missing"}))
    assert info.value.code == "inventory.vehicle_not_found"


async def test_consent_that_does_not_cover_lead_submission_is_invalid_consent(harness: Harness) -> None:
    await stock(harness)
    for consent in (
        {**CONSENT, "scope": ["marketing"]},
        {**CONSENT, "expires_at": (NOW - timedelta(days=1)).isoformat()},
    ):
        with pytest.raises(ForecourtError) as info:
            await harness.call("leads.create", lead_payload(consent=consent))
        assert info.value.code == "consent.invalid_consent"


async def test_a_lead_without_consent_records_no_grant(harness: Harness) -> None:
    await stock(harness)
    body = lead_payload()
    del body["consent"]
    lead = await harness.call("leads.create", body)
    assert lead["consent_id"] is None
    assert (await harness.call("consent.list", {}))["items"] == []


async def test_list_filters_by_status_and_get_is_scoped_to_the_dealership(harness: Harness) -> None:
    await stock(harness)
    lead = await harness.call("leads.create", lead_payload())
    await harness.call("leads.update", {"lead_id": lead["id"], "status": "contacted"})
    assert [x["id"] for x in (await harness.call("leads.list", {"status": "contacted"}))["items"]] == [lead["id"]]
    assert (await harness.call("leads.list", {"status": "new"}))["items"] == []
    with pytest.raises(ForecourtError) as info:
        await harness.call("leads.get", {"lead_id": lead["id"]}, dealership_id=OTHER)
    assert info.value.code == "leads.lead_not_found"


async def test_update_follows_the_lifecycle_and_rejects_reopening_a_closed_lead(harness: Harness) -> None:
    await stock(harness)
    lead = await harness.call("leads.create", lead_payload())
    later = NOW + timedelta(minutes=5)
    updated = await harness.call(
        "leads.update", {"lead_id": lead["id"], "status": "qualified", "assigned_to": "rep-7"}, now=later
    )
    assert (updated["status"], updated["assigned_to"]) == ("qualified", "rep-7")
    assert updated["updated_at"] != lead["updated_at"]
    await harness.call("leads.update", {"lead_id": lead["id"], "status": "closed"})
    with pytest.raises(ForecourtError) as info:
        await harness.call("leads.update", {"lead_id": lead["id"], "status": "new"})
    assert info.value.code == "leads.invalid_status_transition"


async def test_customers_list_pages_through_every_customer(harness: Harness) -> None:
    await stock(harness)
    for n in range(5):
        await harness.call("leads.create", lead_payload(customer={"first_name": f"C{n}", "email": f"c{n}@example.com"}))
    first = await harness.call("customers.list", {"limit": 2})
    seen = [c["id"] for c in first["items"]]
    cursor = first.get("next_cursor")
    while cursor:
        page = await harness.call("customers.list", {"limit": 2, "cursor": cursor})
        seen += [c["id"] for c in page["items"]]
        cursor = page.get("next_cursor")
    assert len(seen) == len(set(seen)) == 5
    with pytest.raises(ForecourtError) as info:
        await harness.call("customers.get", {"customer_id": seen[0]}, dealership_id=OTHER)
    assert info.value.code == "customers.customer_not_found"
