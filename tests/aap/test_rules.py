"""Every AAP behaviour rule in SPEC-NOTES, one test each (driven through the A2A front door)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from forecourt.actions.aap.translate import otd_minor, tax_minor
from forecourt.domain.money import Money
from forecourt.domain.service import Appointment, AppointmentKind, AppointmentStatus
from forecourt.domain.tenancy import DayHours

from .support import TOYOTA, Rig, error_of, fixture, payload_of

RFC3339_WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
LA = ZoneInfo("America/Los_Angeles")


def lead(**changes: Any) -> dict[str, Any]:
    body = fixture("lead-submit-request.minimal.example.json")
    body.update(changes)
    return body


async def vehicles(rig: Rig, limit: int = 50) -> list[dict[str, Any]]:
    found = await rig.rpc("inventory.search", {"type": "inventory.search.request", "pagination": {"limit": limit}})
    return list(payload_of(found)["data"]["vehicles"])


async def test_a_sold_vehicle_is_never_offered_as_available(rig: Rig) -> None:
    target = (await vehicles(rig))[0]
    async with rig.services.store.transaction() as uow:
        await uow.inventory.set_status(TOYOTA, target["vehicle_id"], "sold", datetime.now(UTC))
    assert target["vin"] not in {v["vin"] for v in await vehicles(rig, 100)}
    detail = await rig.rest("inventory.vehicle", {"type": "inventory.vehicle.request", "vin": target["vin"]})
    assert error_of(detail)["code"] == "VEHICLE_UNAVAILABLE"
    interest = {"vin": target["vin"], "condition": target["condition"]}
    submitted = await rig.rpc("lead.submit", lead(vehicle_of_interest=interest))
    assert error_of(submitted)["code"] == "VEHICLE_UNAVAILABLE"


async def test_every_availability_claim_carries_last_verified_at_with_an_offset(rig: Rig) -> None:
    listed = await vehicles(rig)
    assert listed
    assert all(RFC3339_WITH_OFFSET.match(v["last_verified_at"]) for v in listed)
    detail = payload_of(
        await rig.rpc("inventory.vehicle", {"type": "inventory.vehicle.request", "vin": listed[0]["vin"]})
    )
    assert RFC3339_WITH_OFFSET.match(detail["data"]["last_verified_at"])


async def test_anonymous_search_works_on_a_public_agent(rig: Rig) -> None:
    response = await rig.rest("inventory.search", {"type": "inventory.search.request", "privacy": {"anonymous": True}})
    assert response.status_code == 200
    assert payload_of(response)["data"]["total"] > 0


async def test_consent_scope_other_than_exactly_lead_submission_is_invalid_consent(rig: Rig) -> None:
    for scope in (["marketing"], ["lead_submission", "marketing"]):
        body = lead()
        body["consent"]["scope"] = scope
        assert error_of(await rig.rest("lead.submit", body))["code"] == "INVALID_CONSENT"


async def test_expired_consent_is_invalid_consent(rig: Rig) -> None:
    body = lead()
    body["consent"]["expires_at"] = "2020-01-01T00:00:00Z"
    response = await rig.rest("lead.submit", body)
    assert response.status_code == 403
    assert error_of(response)["code"] == "INVALID_CONSENT"


async def test_a_lead_without_consent_is_contact_consent_required(rig: Rig) -> None:
    body = lead()
    del body["consent"]
    assert error_of(await rig.rest("lead.submit", body))["code"] == "CONTACT_CONSENT_REQUIRED"


async def test_a_follow_up_channel_outside_allowed_channels_is_contact_consent_required(rig: Rig) -> None:
    body = lead()
    body["customer"]["preferred_contact"] = "sms"  # consent allows only email
    response = await rig.rest("lead.submit", body)
    assert response.status_code == 403
    assert error_of(response)["code"] == "CONTACT_CONSENT_REQUIRED"


async def test_condition_vocabularies_are_enforced_per_context(rig: Rig) -> None:
    wrong_sale = lead(vehicle_of_interest={"make": "Toyota", "condition": "good"})
    assert error_of(await rig.rpc("lead.submit", wrong_sale))["code"] == "INVALID_CONDITION"
    wrong_trade = lead(trade_in={"make": "Honda", "condition": "used", "mileage": 1000})
    assert error_of(await rig.rpc("lead.submit", wrong_trade))["code"] == "INVALID_CONDITION"
    right = lead(vehicle_of_interest={"make": "Toyota", "condition": "cpo"}, trade_in={"condition": "fair"})
    assert payload_of(await rig.rpc("lead.submit", right))["data"]["status"] == "received"


async def test_the_same_buyer_and_vehicle_within_24_hours_is_a_duplicate(rig: Rig) -> None:
    vin = (await vehicles(rig))[0]["vin"]
    first = payload_of(await rig.rpc("lead.submit", lead(vehicle_of_interest={"vin": vin}, idempotency_key="k-1")))
    second = payload_of(await rig.rpc("lead.submit", lead(vehicle_of_interest={"vin": vin}, idempotency_key="k-2")))
    assert first["data"]["status"] == "received"
    assert second["data"]["status"] == "duplicate"
    assert second["data"]["lead_id"] != first["data"]["lead_id"]


async def test_an_idempotency_key_replays_the_original_lead_and_rejects_a_different_body(rig: Rig) -> None:
    first = payload_of(await rig.rest("lead.submit", lead(idempotency_key="idem-42")))
    again = payload_of(await rig.rpc("lead.submit", lead(idempotency_key="idem-42")))
    assert again["data"]["lead_id"] == first["data"]["lead_id"]
    assert again["data"]["status"] == first["data"]["status"] == "received"
    changed = lead(idempotency_key="idem-42", message="a different question")
    assert error_of(await rig.rest("lead.submit", changed))["code"] == "IDEMPOTENCY_CONFLICT"


async def test_the_consent_grant_is_kept_verbatim_as_an_audit_record(rig: Rig) -> None:
    body = lead()
    lead_id = payload_of(await rig.rpc("lead.submit", body))["data"]["lead_id"]
    async with rig.services.store.transaction() as uow:
        stored = await uow.leads.get(TOYOTA, lead_id)
        assert stored is not None
        assert stored.consent_id
        grant = await uow.consent.get(TOYOTA, stored.consent_id)
    assert grant is not None
    assert grant.evidence["consent_text"] == body["consent"]["consent_text"]
    assert [c.value for c in grant.allowed_channels] == body["consent"]["allowed_channels"]
    assert grant.scope == ("lead_submission",)
    assert grant.source_agent == body["consent"]["source_agent"]
    assert grant.granted_at == datetime(2026, 4, 30, 10, 42, tzinfo=UTC)


def next_local(weekday: int, hour: int, minute: int = 0) -> datetime:
    """The next ``weekday`` (0 = Monday) at least 2 days ahead, at ``hour:minute`` in Los Angeles."""
    day = datetime.now(LA).date() + timedelta(days=2)
    while day.weekday() != weekday:
        day += timedelta(days=1)
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=LA)


def appointment(start: datetime, minutes: int = 60) -> dict[str, Any]:
    end = start + timedelta(minutes=minutes)
    return {
        "appointment_type": "test_drive",
        "requested_windows": [{"start": start.isoformat(), "end": end.isoformat()}],
        "duration_minutes": minutes,
    }


async def test_a_free_window_inside_sales_hours_is_confirmed_in_the_dealers_time_zone(rig: Rig) -> None:
    start = next_local(0, 10)  # Monday 10:00 Pacific; sales open 09:00-20:00
    data = payload_of(await rig.rpc("lead.submit", lead(appointment=appointment(start))))["data"]
    assert data["appointment"]["status"] == "confirmed"
    confirmed = datetime.fromisoformat(data["appointment"]["confirmed_window"]["start"])
    assert confirmed == start


async def _book(rig: Rig, start: datetime, count: int) -> None:
    now = datetime.now(UTC)
    async with rig.services.store.transaction() as uow:
        for n in range(count):
            await uow.service.add_appointment(
                Appointment(
                    id=f"appt-busy-{start.timestamp()}-{n}",
                    dealership_id=TOYOTA,
                    kind=AppointmentKind.TEST_DRIVE,
                    status=AppointmentStatus.CONFIRMED,
                    start=start,
                    end=start + timedelta(hours=1),
                    created_at=now,
                    updated_at=now,
                )
            )


async def test_a_booked_or_closed_window_gets_proposed_real_free_slots(rig: Rig) -> None:
    busy = next_local(1, 11)  # Tuesday 11:00 Pacific, fully booked
    await _book(rig, busy, 2)
    data = payload_of(await rig.rpc("lead.submit", lead(appointment=appointment(busy))))["data"]
    assert data["appointment"]["status"] == "proposed"
    slots = [
        (datetime.fromisoformat(s["start"]), datetime.fromisoformat(s["end"]))
        for s in data["appointment"]["proposed_slots"]
    ]
    assert slots
    for start, end in slots:
        local_start, local_end = start.astimezone(LA), end.astimezone(LA)
        assert local_start.hour >= 9
        assert (local_end.hour, local_end.minute) <= (20, 0)
        assert not (start < busy + timedelta(hours=1) and busy < end)  # never the booked hour
    early = next_local(2, 7)  # Wednesday 07:00 Pacific, before opening
    data = payload_of(await rig.rpc("lead.submit", lead(appointment=appointment(early), idempotency_key="x2")))["data"]
    assert data["appointment"]["status"] == "proposed"


async def test_appointment_time_unavailable_only_when_nothing_can_be_offered(rig: Rig) -> None:
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(TOYOTA)
        assert dealer is not None
        closed = {d: DayHours() for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")}
        await uow.tenancy.upsert_dealership(dealer.model_copy(update={"sales_hours": closed}))
    response = await rig.rest("lead.submit", lead(appointment=appointment(next_local(0, 10))))
    assert response.status_code == 409
    assert error_of(response)["code"] == "APPOINTMENT_TIME_UNAVAILABLE"


async def test_an_appointment_without_windows_stays_requested(rig: Rig) -> None:
    body = lead(appointment={"appointment_type": "showroom_visit"})
    assert payload_of(await rig.rpc("lead.submit", body))["data"]["appointment"]["status"] == "requested"


async def test_offered_price_appears_only_with_a_zip_and_price_is_out_the_door(rig: Rig) -> None:
    listed = (await vehicles(rig))[0]
    assert "offered_price" not in listed
    plain = payload_of(await rig.rpc("inventory.vehicle", {"type": "inventory.vehicle.request", "vin": listed["vin"]}))
    assert "offered_price" not in plain["data"]
    zipped = payload_of(
        await rig.rpc("inventory.vehicle", {"type": "inventory.vehicle.request", "vin": listed["vin"], "zip": "94107"})
    )["data"]
    async with rig.services.store.transaction() as uow:
        dealer = await uow.tenancy.get_dealership(TOYOTA)
        vehicle = await uow.inventory.get_by_vin(TOYOTA, listed["vin"])
    assert dealer is not None
    assert vehicle is not None
    base = (vehicle.list_price or vehicle.price).amount_minor
    offered = Money.of(base + tax_minor(base, dealer.tax_rate_bps))
    assert Decimal(str(zipped["offered_price"]["amount"])) == offered.to_major()
    otd = Money.of(otd_minor(vehicle.price.amount_minor, dealer))
    assert Decimal(str(zipped["price"]["amount"])) == otd.to_major()
    assert otd.amount_minor > vehicle.price.amount_minor  # fees and tax are included


async def test_a_price_ceiling_filters_on_the_out_the_door_price(rig: Rig) -> None:
    listed = await vehicles(rig, 100)
    prices = sorted(Decimal(str(v["price"]["amount"])) for v in listed)
    ceiling = prices[len(prices) // 2]
    found = await rig.rpc(
        "inventory.search",
        {"type": "inventory.search.request", "filters": {"price_max": float(ceiling)}, "pagination": {"limit": 100}},
    )
    got = [Decimal(str(v["price"]["amount"])) for v in payload_of(found)["data"]["vehicles"]]
    assert got
    assert max(got) <= ceiling
    assert len(got) == sum(1 for p in prices if p <= ceiling)
