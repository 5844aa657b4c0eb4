"""Deterministic, realistic demo inventory for one rooftop."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from forecourt.demo.catalog import BRANDS, ModelSpec, TrimSpec, models_for
from forecourt.demo.common import DEMO_MODEL_YEAR, slug, sub_rng
from forecourt.demo.tenants import RooftopPlan
from forecourt.demo.vins import build_vin
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.tenancy import Dealership
from forecourt.domain.vehicle import Condition, Vehicle, VehicleStatus
from forecourt.inventory_import.ids import vehicle_id_for

_NEW_STATUS = (
    (VehicleStatus.AVAILABLE, 80),
    (VehicleStatus.IN_TRANSIT, 10),
    (VehicleStatus.PENDING, 5),
    (VehicleStatus.SOLD, 5),
)
_USED_STATUS = ((VehicleStatus.AVAILABLE, 88), (VehicleStatus.PENDING, 6), (VehicleStatus.SOLD, 6))
_USED_AGE_WEIGHTS = (0, 6, 12, 14, 13, 11, 9, 8, 7, 6, 5, 4, 3)  # index = age in years
_MILES_PER_YEAR = 11_500
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Identity:
    """What a generated vehicle is: year, model line, trim and VIN."""

    year: int
    spec: ModelSpec
    trim: TrimSpec
    vin: str

    @property
    def description(self) -> str:
        """``2022 Toyota RAV4 XLE``."""
        return f"{self.year} {self.spec.make} {self.spec.model} {self.trim.name}"


def pick_identity(rng: random.Random, models: tuple[ModelSpec, ...], year: int, serials: set[int]) -> Identity:
    """A model line built in ``year`` (nearest year when none is), a trim, and a fresh VIN serial."""
    candidates = [m for m in models if m.first_year <= year <= m.last_year]
    if not candidates:
        candidates = list(models)
        year = max(min(year, candidates[0].last_year), candidates[0].first_year)
        candidates = [m for m in models if m.first_year <= year <= m.last_year]
    spec = rng.choice(candidates)
    trim = rng.choice(spec.trims)
    serial = rng.randrange(100_000, 1_000_000)
    while serial in serials:
        serial = rng.randrange(100_000, 1_000_000)
    serials.add(serial)
    vin = build_vin(rng.choice(spec.wmis), spec.vds, year, rng.choice(spec.plants), serial)
    return Identity(year, spec, trim, vin)


def used_mileage(rng: random.Random, age: int, cap: int | None = None) -> int:
    """Odometer miles for a used vehicle of ``age`` model years (a 0-year-old demo/loaner gets a few thousand)."""
    per_year = max(rng.gauss(_MILES_PER_YEAR, 3_500), 3_000)
    miles = int(max(age, 0.3) * per_year)
    if cap is not None:
        miles = min(miles, cap - rng.randrange(1_000, 9_000))
    return max(miles, 1_200)


def _round_price(dollars: float) -> int:
    """Dealer-style price: nearest $500, less $5 (``27995``)."""
    return max(round(dollars / 500.0) * 500 - 5, 995)


def original_msrp(trim: TrimSpec, make: str, age: int) -> int:
    """Approximate sticker price of the trim when it was new, ``age`` model years ago, in dollars."""
    base = trim.msrp * (0.975**age) + BRANDS[make].destination
    return round(base / 5.0) * 5


def used_price(trim: TrimSpec, make: str, age: int, miles: int, *, certified: bool) -> int:
    """A used retail price in dollars from the trim's MSRP, brand retention, age and mileage."""
    msrp = original_msrp(trim, make, age)
    retained = BRANDS[make].retention * 0.86 * (0.93 ** max(age - 1, 0))
    expected = max(age, 1) * _MILES_PER_YEAR
    value = msrp * retained + (expected - miles) * 0.05
    if certified:
        value += 1_200
    return _round_price(max(value, msrp * 0.12, 4_500))


def _weighted(rng: random.Random, table: tuple[tuple[_T, int], ...]) -> _T:
    values = [v for v, _ in table]
    weights = [w for _, w in table]
    return rng.choices(values, weights=weights)[0]


@dataclass(frozen=True, slots=True)
class _Pricing:
    msrp: int
    list_price: int
    price: int
    miles: int


def _pricing(
    rng: random.Random, ident: Identity, condition: Condition, status: VehicleStatus, model_year: int
) -> _Pricing:
    make = ident.spec.make
    if condition is Condition.NEW:
        options = rng.choice((0, 0, 0, 425, 1_050, 1_990, 2_850))
        msrp = ident.trim.msrp + BRANDS[make].destination + options
        discount = min(rng.choice((0, 0, 500, 1_000, 1_500, 2_000)), msrp // 2_000 * 100)
        miles = rng.randint(0, 10) if status is VehicleStatus.IN_TRANSIT else rng.randint(0, 50)
        return _Pricing(msrp, msrp, msrp - discount, miles)
    age = model_year - ident.year
    miles = used_mileage(rng, age, cap=80_000 if condition is Condition.CPO else None)
    price = used_price(ident.trim, make, age, miles, certified=condition is Condition.CPO)
    list_price = price + rng.choice((0, 0, 500, 1_000, 1_500))
    return _Pricing(original_msrp(ident.trim, make, age), list_price, price, miles)


def _year_for(rng: random.Random, condition: Condition, model_year: int) -> int:
    if condition is Condition.NEW:
        return model_year if rng.random() < 0.8 else model_year - 1
    if condition is Condition.CPO:
        return model_year - rng.randint(1, 5)
    ages = list(range(len(_USED_AGE_WEIGHTS)))
    return model_year - rng.choices(ages, weights=_USED_AGE_WEIGHTS)[0]


def _condition(rng: random.Random, plan: RooftopPlan) -> Condition:
    r = rng.random()
    if r < plan.new_share:
        return Condition.NEW
    if r < plan.new_share + plan.cpo_share:
        return Condition.CPO
    return Condition.USED


def _photos(rng: random.Random, dealership_id: str, stock: str, status: VehicleStatus) -> tuple[str, ...]:
    count = rng.randint(0, 1) if status is VehicleStatus.IN_TRANSIT else rng.randint(6, 14)
    base = f"https://cdn.forecourt.example/{dealership_id}/{stock.lower()}"
    return tuple(f"{base}/{n:02d}.jpg" for n in range(1, count + 1))


def _describe(ident: Identity, condition: Condition, ext: str, interior: str) -> str:
    text = (
        f"{ident.description} in {ext} with {interior} interior. {ident.trim.engine}, "
        f"{ident.trim.transmission}, {ident.trim.driveline.upper()}."
    )
    if condition is Condition.CPO:
        text += f" {ident.spec.make} Certified Pre-Owned with extended powertrain warranty."
    elif condition is Condition.USED:
        text += " Clean title, inspected and reconditioned."
    return text


def generate_vehicles(
    dealership: Dealership,
    plan: RooftopPlan,
    count: int,
    *,
    seed: int,
    now: datetime,
    model_year: int = DEMO_MODEL_YEAR,
) -> list[Vehicle]:
    """A rooftop's demo inventory: same ``seed`` and ``count``, same VINs, stock numbers and prices.

    Only ``last_verified_at`` and ``sold_at`` depend on ``now``.

    Args:
        dealership: The rooftop (its id, currency and website are used).
        plan: Brands, stock prefix and new/used/CPO mix of the rooftop.
        count: How many units to generate.
        seed: Seed of the inventory stream.
        now: Anchor of time-relative fields.
        model_year: The newest model year on the lot.
    """
    rng = sub_rng(seed, dealership.id, "vehicles")
    models = models_for(plan.brands)
    serials: set[int] = set()
    vehicles: list[Vehicle] = []
    for n in range(count):
        condition = _condition(rng, plan)
        ident = pick_identity(rng, models, _year_for(rng, condition, model_year), serials)
        if condition is Condition.NEW and ident.year < model_year - 1:
            condition = Condition.USED  # a discontinued line cannot be sold new
        status = _weighted(rng, _NEW_STATUS if condition is Condition.NEW else _USED_STATUS)
        pricing = _pricing(rng, ident, condition, status, model_year)
        brand = BRANDS[ident.spec.make]
        ext, interior = rng.choice(brand.exterior_colors), rng.choice(brand.interior_colors)
        stock = f"{plan.stock_prefix}{10_000 + n}" + ("" if condition is Condition.NEW else rng.choice("AAP"))
        verified_minutes = rng.randint(3, 360)
        sold_hours = rng.randint(2, 240)
        money = dealership.currency
        vehicles.append(
            Vehicle(
                id=vehicle_id_for(dealership.id, ident.vin),
                dealership_id=dealership.id,
                vin=ident.vin,
                stock=stock,
                year=ident.year,
                make=ident.spec.make,
                model=ident.spec.model,
                trim=ident.trim.name,
                condition=condition,
                body=ident.spec.body,
                transmission=ident.trim.transmission,
                driveline=ident.trim.driveline,
                fuel=ident.trim.fuel,
                engine=ident.trim.engine,
                exterior_color=ext,
                interior_color=interior,
                msrp=Money.of(pricing.msrp * 100, money),
                list_price=Money.of(pricing.list_price * 100, money),
                price=Money.of(pricing.price * 100, money),
                mileage=Measure(value=pricing.miles, unit="mi"),
                status=status,
                photos=_photos(rng, dealership.id, stock, status),
                vdp_url=(f"{dealership.website}/inventory/{condition.value}/{slug(f'{ident.description} {stock}')}"),
                description=_describe(ident, condition, ext, interior),
                last_verified_at=now - timedelta(minutes=verified_minutes),
                sold_at=now - timedelta(hours=sold_hours) if status is VehicleStatus.SOLD else None,
            )
        )
    return vehicles
