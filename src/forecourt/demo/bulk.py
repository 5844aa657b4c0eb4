"""Benchmark-sized data: up to millions of vehicles across thousands of rooftops, generated in batches.

Generation is table-driven: VIN check-digit sums, model candidates per year and prices are precomputed,
and vehicles are built with ``model_construct`` (every value is valid by construction), so a million
vehicles take seconds. Inserting goes through the store's fast path (``Store.bulk_load_vehicles``:
multi-row inserts, no change events), one transaction per batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from forecourt import caching
from forecourt.demo.catalog import BRANDS, ModelSpec, TrimSpec, models_for
from forecourt.demo.common import DEFAULT_SEED, DEMO_MODEL_YEAR, default_now, sub_rng
from forecourt.demo.inventory import original_msrp, used_price
from forecourt.demo.vins import VinFactory
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.tenancy import Address, Company, Dealership, Member, Policy, Profile
from forecourt.domain.vehicle import Condition, Vehicle, VehicleStatus
from forecourt.inventory_import.ids import vehicle_id_for
from forecourt.store.base import Store

logger = logging.getLogger(__name__)

BULK_PROFILE = "bench"
BULK_COMPANY = "bench-motor-group"
ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(vehicles_done, vehicles_total)`` after each batch."""

_SERIAL_SPACE = 1_000_000
_SERIAL_STRIDE = 7_919  # prime, coprime with 10**6: a permutation of the serial space
_PLANT_ALPHABET = "ABCDEFGHJKLMNPRSTUVWXYZ123456789"
_BRAND_MIX: tuple[tuple[str, ...], ...] = (("Toyota",), ("Honda",), ())
_STATUSES = (VehicleStatus.AVAILABLE,) * 17 + (VehicleStatus.PENDING, VehicleStatus.SOLD, VehicleStatus.IN_TRANSIT)


@dataclass(frozen=True)
class BulkReport:
    """What :func:`generate_bulk` wrote and how long it took."""

    dealerships: int
    vehicles: int
    seconds: float


def bulk_dealership_ids(count: int) -> list[str]:
    """``bench-0001`` ... (zero-padded to at least four digits)."""
    width = max(4, len(str(count)))
    return [f"bench-{n:0{width}d}" for n in range(1, count + 1)]


def bulk_dealerships(count: int) -> list[Dealership]:
    """Benchmark rooftops: Toyota, Honda and multi-brand used stores in turn, all under :data:`BULK_COMPANY`."""
    result: list[Dealership] = []
    for n, dealership_id in enumerate(bulk_dealership_ids(count)):
        brands = _BRAND_MIX[n % len(_BRAND_MIX)]
        result.append(
            Dealership(
                id=dealership_id,
                company_id=BULK_COMPANY,
                name=f"Bench {' '.join(brands) or 'Autos'} {n + 1}",
                domain=f"{dealership_id}.bench.forecourt.example",
                website=f"https://{dealership_id}.bench.forecourt.example",
                brands=brands or tuple(BRANDS),
                address=Address(city="Sacramento", region="CA", postal_code=f"958{n % 100:02d}"),
            )
        )
    return result


@caching.memo("demo.bulk.candidates", 1024)
def _candidates(brands: tuple[str, ...], year: int) -> tuple[ModelSpec, ...]:
    return tuple(m for m in models_for(brands) if m.first_year <= year <= m.last_year)


@caching.memo("demo.bulk.vin_factories", 16_384)
def _factory(wmi: str, vds: str, year: int, plant: str) -> VinFactory:
    return VinFactory(wmi, vds, year, plant)


@caching.memo("demo.bulk.used_prices", 65_536)
def _used_price(trim: TrimSpec, make: str, age: int, miles_k: int, certified: bool) -> int:
    return used_price(trim, make, age, miles_k * 1000, certified=certified)


@caching.memo("demo.bulk.prices", 65_536)
def _usd(dollars: int) -> Money:
    return Money.model_construct(amount_minor=dollars * 100, currency="USD")


_VEHICLE_FIELDS = frozenset(Vehicle.model_fields)


def _construct(**values: Any) -> Vehicle:
    """``Vehicle.model_construct`` without its per-field default handling: every field is given here.

    Values are valid by construction (VINs carry their check digit, prices are positive minor units).
    """
    vehicle = Vehicle.__new__(Vehicle)
    object.__setattr__(vehicle, "__dict__", values)
    object.__setattr__(vehicle, "__pydantic_fields_set__", set(_VEHICLE_FIELDS))
    object.__setattr__(vehicle, "__pydantic_extra__", None)
    object.__setattr__(vehicle, "__pydantic_private__", None)
    return vehicle


def _plant(spec: ModelSpec, block: int) -> str:
    """The model's own plant for the first million units; other plant codes keep later blocks unique."""
    own = spec.plants[0]
    others = [c for c in _PLANT_ALPHABET if c != own]
    return own if block == 0 else others[(block - 1) % len(others)]


class _Builder:
    """Builds one rooftop's bulk vehicles from its own random stream."""

    def __init__(self, dealership: Dealership, seed: int, now: datetime, first_index: int) -> None:
        self.d = dealership
        self.rng = sub_rng(seed, dealership.id, "bulk")
        self.now = now
        self.index = first_index
        self.brands = () if len(dealership.brands) > 2 else dealership.brands
        self.new_share = 0.0 if not self.brands else 0.5

    def vehicle(self, n: int) -> Vehicle:
        rng, g = self.rng, self.index + n
        new = rng.random() < self.new_share
        year = DEMO_MODEL_YEAR - (0 if new and rng.random() < 0.8 else 1 if new else rng.randint(1, 11))
        spec = rng.choice(_candidates(self.brands, year))
        trim = rng.choice(spec.trims)
        block, serial_index = divmod(g, _SERIAL_SPACE)
        serial = (serial_index * _SERIAL_STRIDE) % _SERIAL_SPACE
        vin = _factory(rng.choice(spec.wmis), spec.vds, year, _plant(spec, block)).make(serial)
        status = rng.choice(_STATUSES) if not new else VehicleStatus.AVAILABLE
        brand = BRANDS[spec.make]
        stock = f"S{g:07d}"
        if new:
            msrp = list_price = price = trim.msrp + brand.destination
            miles = rng.randint(0, 50)
            condition = Condition.NEW
        else:
            age = DEMO_MODEL_YEAR - year
            miles_k = max(1, int(age * rng.uniform(7.0, 15.0)))
            miles = miles_k * 1000 + rng.randint(0, 999)
            price = _used_price(trim, spec.make, age, miles_k, False)
            msrp, list_price = original_msrp(trim, spec.make, age), price
            condition = Condition.USED
        return _construct(
            id=vehicle_id_for(self.d.id, vin),
            dealership_id=self.d.id,
            vin=vin,
            stock=stock,
            year=year,
            make=spec.make,
            model=spec.model,
            trim=trim.name,
            condition=condition,
            body=spec.body,
            transmission=trim.transmission,
            driveline=trim.driveline,
            fuel=trim.fuel,
            engine=trim.engine,
            exterior_color=rng.choice(brand.exterior_colors),
            interior_color=rng.choice(brand.interior_colors),
            msrp=_usd(msrp),
            list_price=_usd(list_price),
            price=_usd(price),
            mileage=Measure.model_construct(value=miles, unit="mi"),
            status=status,
            photos=tuple(f"https://cdn.forecourt.example/{self.d.id}/{stock.lower()}/{k:02d}.jpg" for k in (1, 2, 3)),
            vdp_url=f"{self.d.website}/inventory/{condition.value}/{stock.lower()}",
            description="",
            last_verified_at=self.now - timedelta(minutes=rng.randint(1, 720)),
            created_at=None,
            updated_at=None,
            sold_at=self.now if status is VehicleStatus.SOLD else None,
        )


def iter_bulk_vehicles(
    dealerships: Sequence[Dealership],
    vehicles_per_dealership: int,
    *,
    seed: int = DEFAULT_SEED,
    now: datetime | None = None,
    batch_size: int = 5_000,
) -> Iterator[list[Vehicle]]:
    """Batches of benchmark vehicles, rooftop by rooftop; VINs are unique across the whole set.

    Args:
        dealerships: The rooftops (their ids and websites are used).
        vehicles_per_dealership: Units per rooftop.
        seed: Seed; the same seed and sizes give the same vehicles.
        now: Anchor of ``last_verified_at``.
        batch_size: Vehicles per yielded batch.
    """
    at = now or default_now()
    batch: list[Vehicle] = []
    for position, dealership in enumerate(dealerships):
        builder = _Builder(dealership, seed, at, position * vehicles_per_dealership)
        for n in range(vehicles_per_dealership):
            batch.append(builder.vehicle(n))
            if len(batch) >= batch_size:
                yield batch
                batch = []
    if batch:
        yield batch


async def _tenancy(store: Store, dealerships: list[Dealership]) -> None:
    async with store.transaction() as uow:
        await uow.tenancy.upsert_profile(Profile(id=BULK_PROFILE, name="Forecourt benchmark"))
        await uow.tenancy.upsert_company(Company(id=BULK_COMPANY, profile_id=BULK_PROFILE, name="Bench Motor Group"))
        for dealership in dealerships:
            await uow.tenancy.upsert_dealership(dealership)
        await uow.tenancy.upsert_policy(Policy(id=f"{BULK_COMPANY}-default", company_id=BULK_COMPANY))
        await uow.tenancy.upsert_member(
            Member(
                id="bench-agent",
                company_id=BULK_COMPANY,
                profile_id=BULK_PROFILE,
                name="Benchmark agent",
                allowed_tools=("*",),
                scopes=("amcp:inventory:read", "amcp:inventory:write", "amcp:leads:read", "amcp:leads:write"),
                dealership_ids=tuple(d.id for d in dealerships),
            )
        )


async def generate_bulk(
    store: Store,
    *,
    dealerships: int = 1_000,
    vehicles_per_dealership: int = 1_000,
    seed: int = DEFAULT_SEED,
    now: datetime | None = None,
    batch_size: int = 5_000,
    progress: ProgressCallback | None = None,
) -> BulkReport:
    """Write a benchmark-sized inventory: ``dealerships`` rooftops with ``vehicles_per_dealership`` units each.

    Rooftops ``bench-0001``... belong to company ``bench-motor-group`` (member ``bench-agent``). Each
    batch is its own transaction, so a run can be interrupted and resumed (vehicles are keyed by VIN).

    Args:
        store: Where to write.
        dealerships: Number of rooftops.
        vehicles_per_dealership: Units per rooftop.
        seed: Seed (same seed and sizes, same data).
        now: Anchor of ``last_verified_at``.
        batch_size: Vehicles per transaction.
        progress: Called as ``progress(done, total)`` after each batch (the CLI drives a Rich bar with it).
    """
    started = time.perf_counter()
    rooftops = bulk_dealerships(dealerships)
    await _tenancy(store, rooftops)
    total, done = dealerships * vehicles_per_dealership, 0
    if progress:
        progress(0, total)
    for batch in iter_bulk_vehicles(rooftops, vehicles_per_dealership, seed=seed, now=now, batch_size=batch_size):
        done += await store.bulk_load_vehicles(batch, batch_size=len(batch))
        if progress:
            progress(done, total)
    seconds = time.perf_counter() - started
    logger.info("bulk data: %d vehicles across %d dealerships in %.1f s", done, dealerships, seconds)
    return BulkReport(dealerships=dealerships, vehicles=done, seconds=seconds)
