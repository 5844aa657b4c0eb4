"""One representative call per dealer action, each output checked against the action's output schema."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from jsonschema import Draft202012Validator

from forecourt.actions.catalogue import dealer_actions
from forecourt.errors import ForecourtError

from .builders import repair_order, slot, vehicle
from .conftest import Harness

LA = ZoneInfo("America/Los_Angeles")


async def test_every_dealer_actions_representative_output_validates_against_its_schema(harness: Harness) -> None:
    async with harness.store.transaction() as uow:
        for n in range(1, 5):
            await uow.inventory.upsert(vehicle(n, price=2_400_000 + n * 50_000))
        await uow.service.add_repair_order(repair_order(1))
        await uow.service.add_slots([slot(datetime(2026, 5, 5, 9, tzinfo=LA))])
    outputs: dict[str, Any] = {}

    async def run(action: str, payload: dict[str, Any]) -> Any:
        outputs[action] = await harness.call(action, payload)  # the harness validates input and output
        return outputs[action]

    await run("dealer.information", {})
    await run("inventory.search", {"make": ["Toyota"], "limit": 2})
    await run("inventory.get", {"vin": vehicle(1).vin})
    await run("inventory.facets", {})
    lead = await run(
        "leads.create",
        {
            "customer": {"first_name": "Ana", "email": "ana@example.com", "preferred_channel": "email"},
            "vehicle_of_interest": {"vehicle_id": vehicle(1).id},
            "consent": {"allowed_channels": ["email"]},
        },
    )
    await run("leads.list", {})
    await run("leads.get", {"lead_id": lead["id"]})
    await run("leads.update", {"lead_id": lead["id"], "status": "contacted"})
    await run("customers.list", {})
    await run("customers.get", {"customer_id": lead["customer_id"]})
    await run("consent.list", {})
    await run("consent.get", {"consent_id": lead["consent_id"]})
    grant = await run("consent.create", {"lead_id": lead["id"], "scope": ["marketing"], "allowed_channels": ["sms"]})
    await run("consent.update", {"consent_id": grant["id"], "status": "revoked"})
    await run("service.list_repair_orders", {})
    await run("service.get_repair_order", {"ro_number": "RO-00001"})
    booked = await run(
        "service.book_appointment",
        {"vehicle_id": "v1", "start": "2026-05-05T09:00:00-07:00", "service_codes": ["OIL"]},
    )
    await run("service.get_appointment", {"appointment_id": booked["appointment_id"]})
    await run("service.list_appointments", {"from": "2026-05-01T00:00:00-07:00"})
    await run("service.update_appointment", {"appointment_id": booked["appointment_id"], "status": "cancelled"})
    await run(
        "deals.request_trade_value",
        {"year": 2022, "make": "Toyota", "model": "Camry", "mileage": {"value": 30000}, "condition": "good"},
    )
    await run("events.list", {"resource_type": "lead"})
    assert set(outputs) == {a.name for a in dealer_actions()}
    for action in dealer_actions():
        assert action.output_schema is not None
        Draft202012Validator(action.output_schema).validate(outputs[action.name])


async def test_a_dealer_action_without_a_resolved_dealership_is_invalid_params(harness: Harness) -> None:
    with pytest.raises(ForecourtError) as info:
        await harness.call("leads.list", {}, dealership_id=None)
    assert info.value.code == "invalid_params"
