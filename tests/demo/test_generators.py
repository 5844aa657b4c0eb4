"""Demo generators without a store: determinism, valid VINs, realistic values, slots in local time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from vininfo import Vin

from forecourt.demo.bulk import bulk_dealerships, iter_bulk_vehicles
from forecourt.demo.catalog import ALL_MODELS, BRANDS
from forecourt.demo.inventory import generate_vehicles
from forecourt.demo.people import generate_customers, generate_leads
from forecourt.demo.service import generate_service, generate_slots
from forecourt.demo.tenants import (
    BAY_SJ,
    DEALERSHIPS,
    HONDA_OAK,
    MEMBERS,
    ROOFTOP_PLANS,
    TOYOTA_SF,
    dealership,
)
from forecourt.demo.vins import build_vin, year_code
from forecourt.domain.people import Channel
from forecourt.domain.vehicle import Condition, Vehicle, VehicleStatus
from forecourt.domain.vin import normalize_vin

NOW = datetime(2026, 11, 20, 17, 45, tzinfo=UTC)
# vininfo names some plants' makers differently (Honda Mexico, Chevrolet Canada, Tesla Motors USA...)
_VININFO_OK = {"Toyota", "Honda", "Ford", "Chevrolet", "Tesla", "Subaru", "Nissan", "Hyundai", "BMW", "Mazda"}


def _inventory(dealership_id: str, count: int = 80, seed: int = 11, now: datetime = NOW) -> list[Vehicle]:
    return generate_vehicles(dealership(dealership_id), ROOFTOP_PLANS[dealership_id], count, seed=seed, now=now)


def _stable(vehicles: list[Vehicle]) -> list[tuple[object, ...]]:
    return [(v.id, v.vin, v.stock, v.price, v.msrp, v.list_price, v.mileage, v.status, v.trim) for v in vehicles]


def test_the_same_seed_gives_the_same_vins_and_prices() -> None:
    assert _stable(_inventory(TOYOTA_SF)) == _stable(_inventory(TOYOTA_SF))


def test_another_day_changes_timestamps_but_not_vins_or_prices() -> None:
    later = _inventory(TOYOTA_SF, now=NOW + timedelta(days=40))
    assert _stable(later) == _stable(_inventory(TOYOTA_SF))
    assert later[0].last_verified_at != _inventory(TOYOTA_SF)[0].last_verified_at


def test_a_different_seed_gives_a_different_inventory() -> None:
    assert {v.vin for v in _inventory(TOYOTA_SF, seed=1)}.isdisjoint({v.vin for v in _inventory(TOYOTA_SF, seed=2)})


def test_growing_the_inventory_keeps_the_first_units() -> None:
    assert _stable(_inventory(HONDA_OAK, count=120))[:80] == _stable(_inventory(HONDA_OAK, count=80))


@pytest.mark.parametrize("dealership_id", [TOYOTA_SF, HONDA_OAK, BAY_SJ])
def test_every_generated_vin_is_valid_and_encodes_its_model_year(dealership_id: str) -> None:
    for vehicle in _inventory(dealership_id, count=200):
        assert normalize_vin(vehicle.vin) == vehicle.vin
        assert Vin(vehicle.vin).verify_checksum()
        assert vehicle.vin[9] == year_code(vehicle.year)
        assert vehicle.vin[6].isalpha()  # position 7: a letter for model years 2010-2039


def test_vins_carry_a_real_wmi_of_their_brand() -> None:
    for vehicle in _inventory(BAY_SJ, count=300):
        manufacturer = Vin(vehicle.vin).manufacturer
        if vehicle.make in _VININFO_OK:
            assert vehicle.make.lower() in manufacturer.lower(), (vehicle.vin, manufacturer)


def test_every_catalogue_wmi_belongs_to_its_brand_in_vininfo() -> None:
    for model in ALL_MODELS:
        for wmi in model.wmis:
            vin = build_vin(wmi, model.vds, 2024, model.plants[0], 123_456)
            assert model.make.lower() in Vin(vin).manufacturer.lower(), (model.make, model.model, wmi)


def test_franchise_rooftops_sell_only_their_brand_and_the_used_store_many() -> None:
    assert {v.make for v in _inventory(TOYOTA_SF)} == {"Toyota"}
    assert {v.make for v in _inventory(HONDA_OAK)} == {"Honda"}
    bay = _inventory(BAY_SJ, count=200)
    assert len({v.make for v in bay}) >= 6
    assert {v.condition for v in bay} == {Condition.USED}


def test_inventory_values_are_realistic() -> None:
    vehicles = _inventory(TOYOTA_SF, count=300)
    trims = {(m.make, m.model): {t.name for t in m.trims} for m in ALL_MODELS}
    for v in vehicles:
        assert v.trim in trims[(v.make, v.model)]
        assert v.mileage.unit == "mi"
        assert v.price.currency == "USD"
        assert v.price.amount_minor % 100 == 0
        assert 5_000_00 <= v.price.amount_minor <= 120_000_00
        assert v.body
        assert v.fuel
        assert v.transmission
        assert v.driveline
        assert v.engine
        assert v.exterior_color in BRANDS[v.make].exterior_colors
        assert v.vdp_url is not None
        assert v.vdp_url.startswith("https://toyota-sf.demo.forecourt.example/inventory/")
        assert all(p.startswith("https://cdn.forecourt.example/demo-toyota-sf/") for p in v.photos)
        assert v.last_verified_at < NOW
        assert v.last_verified_at.utcoffset() is not None
        if v.condition is Condition.NEW:
            assert 0 <= v.mileage.value <= 50
            assert v.msrp is not None
            assert v.price.amount_minor <= v.msrp.amount_minor
        else:
            assert v.mileage.value >= 1_000
    statuses = [v.status for v in vehicles]
    assert statuses.count(VehicleStatus.AVAILABLE) > 0.7 * len(vehicles)
    assert {VehicleStatus.PENDING, VehicleStatus.SOLD, VehicleStatus.IN_TRANSIT} <= set(statuses)
    assert all(v.sold_at is not None for v in vehicles if v.status is VehicleStatus.SOLD)
    assert len({v.stock for v in vehicles}) == len(vehicles)


def test_older_used_cars_cost_less_than_newer_ones_of_the_same_trim() -> None:
    from forecourt.demo.inventory import used_price

    trim = ALL_MODELS[0].trims[0]
    prices = [used_price(trim, "Toyota", age, age * 11_500, certified=False) for age in range(1, 10)]
    assert prices == sorted(prices, reverse=True)


@given(st.sampled_from(ALL_MODELS), st.integers(2010, 2039), st.integers(0, 999_999))
@settings(max_examples=200)
def test_build_vin_is_valid_for_every_catalogue_model_and_year(model: object, year: int, serial: int) -> None:
    from forecourt.demo.catalog import ModelSpec

    assert isinstance(model, ModelSpec)
    vin = build_vin(model.wmis[0], model.vds, year, model.plants[0], serial)
    assert normalize_vin(vin) == vin
    assert Vin(vin).verify_checksum()


def test_customers_are_fictional_and_deterministic() -> None:
    d, plan = dealership(HONDA_OAK), ROOFTOP_PLANS[HONDA_OAK]
    customers = generate_customers(d, plan, 60, seed=3, now=NOW)
    assert customers == generate_customers(d, plan, 60, seed=3, now=NOW)
    assert len({c.id for c in customers}) == 60
    for c in customers:
        assert c.email is not None
        assert c.email.endswith(("@example.com", "@example.net"))
        assert c.phone is not None
        assert c.phone[5:9] == "5550"
        assert 110 <= int(c.phone[-3:]) <= 199
    assert len({c.phone for c in customers}) == 60


def test_every_lead_has_a_consent_grant_for_lead_submission_and_an_offerable_vehicle() -> None:
    d, plan = dealership(TOYOTA_SF), ROOFTOP_PLANS[TOYOTA_SF]
    vehicles = _inventory(TOYOTA_SF)
    customers = generate_customers(d, plan, 30, seed=11, now=NOW)
    bundle = generate_leads(d, plan, customers, vehicles, 25, seed=11, now=NOW)
    by_id = {v.id: v for v in vehicles}
    grants = {g.id: g for g in bundle.consents}
    assert len(bundle.leads) == 25
    for lead in bundle.leads:
        grant = grants[lead.consent_id or ""]
        assert grant.lead_id == lead.id
        assert grant.customer_id == lead.customer_id
        assert grant.scope == ("lead_submission",)
        assert grant.allowed_channels
        assert all(isinstance(c, Channel) for c in grant.allowed_channels)
        assert grant.evidence["consent_text"]
        assert lead.vehicle_id is not None
        assert by_id[lead.vehicle_id].status.offerable
    appointment_ids = {a.id for a in bundle.appointments}
    assert {lead.appointment_id for lead in bundle.leads if lead.appointment_id} == appointment_ids


def test_service_slots_cover_the_next_14_local_days_within_service_hours() -> None:
    d, plan = dealership(TOYOTA_SF), ROOFTOP_PLANS[TOYOTA_SF]
    slots = generate_slots(d, plan, now=NOW)
    zone = ZoneInfo(d.timezone)
    local_days = {s.start.astimezone(zone).date() for s in slots}
    today = NOW.astimezone(zone).date()
    assert min(local_days) >= today
    assert max(local_days) <= today + timedelta(days=13)
    assert len(local_days) == 12  # two Sundays in the window: service is closed
    for slot in slots:
        local = slot.start.astimezone(zone)
        assert slot.start > NOW
        hours = d.service_hours[local.strftime("%A").lower()]
        assert hours.open is not None
        assert hours.close is not None
        assert hours.open <= local.strftime("%H:%M") < hours.close
        assert slot.end - slot.start == timedelta(minutes=30)
    assert len({s.id for s in slots}) == len(slots)


def test_future_service_appointments_take_a_bay_in_their_slot() -> None:
    d, plan = dealership(HONDA_OAK), ROOFTOP_PLANS[HONDA_OAK]
    customers = generate_customers(d, plan, 20, seed=5, now=NOW)
    bundle = generate_service(d, plan, customers, repair_orders=30, appointments=40, seed=5, now=NOW)
    booked = [a for a in bundle.appointments if a.status.value == "booked"]
    assert booked
    assert sum(s.booked for s in bundle.slots) == len(booked)
    assert all(s.booked <= s.capacity for s in bundle.slots)
    for ro in bundle.repair_orders:
        assert ro.vin is not None
        assert normalize_vin(ro.vin) == ro.vin
        assert ro.lines
        assert ro.total.amount_minor == sum(line.amount.amount_minor for line in ro.lines)
        assert (ro.closed_at is not None) == (ro.status.value == "closed")


def test_the_demo_tenants_are_exactly_the_ones_design_names() -> None:
    assert [(d.id, d.company_id) for d in DEALERSHIPS] == [
        ("demo-toyota-sf", "demo-motor-group"),
        ("demo-honda-oak", "demo-motor-group"),
        ("demo-bay-sj", "demo-bay-autos"),
    ]
    members = {(m.company_id, m.id): m for m in MEMBERS}
    shopper = members[("demo-motor-group", "shopper-agent")]
    crm = members[("demo-motor-group", "crm-agent")]
    assert set(shopper.dealership_ids) == set(crm.dealership_ids) == {"demo-toyota-sf", "demo-honda-oak"}
    assert {"inventory.search", "aap.*", "dealer.information"} <= set(shopper.allowed_tools)
    assert set(shopper.scopes) == {"amcp:inventory:read", "amcp:leads:write"}
    assert crm.allowed_tools == ("*",)
    assert "amcp:service:write" in crm.scopes
    assert members[("demo-motor-group", "ops-admin")].is_admin
    assert members[("demo-bay-autos", "bay-crm-agent")].dealership_ids == ("demo-bay-sj",)


def test_bulk_vehicles_are_unique_valid_and_deterministic() -> None:
    rooftops = bulk_dealerships(30)
    first = [v for batch in iter_bulk_vehicles(rooftops, 400, seed=9, now=NOW, batch_size=1_000) for v in batch]
    again = [v for batch in iter_bulk_vehicles(rooftops, 400, seed=9, now=NOW, batch_size=3_333) for v in batch]
    assert len(first) == 12_000
    assert [v.vin for v in first] == [v.vin for v in again]
    assert len({v.vin for v in first}) == len(first)
    for vehicle in first[::97]:
        assert Vehicle.model_validate(vehicle.model_dump()) == vehicle
        assert Vin(vehicle.vin).verify_checksum()
