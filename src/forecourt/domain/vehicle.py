"""Vehicles in a dealership's inventory, and the search request over them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from forecourt.domain.errors import VinError
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money
from forecourt.domain.timeutil import AwareDatetime
from forecourt.domain.urls import WebLink
from forecourt.domain.vin import normalize_vin


class Condition(StrEnum):
    """Sale condition of an inventory unit (AAP vocabulary)."""

    NEW = "new"
    USED = "used"
    CPO = "cpo"


class TradeCondition(StrEnum):
    """Condition of a trade-in (AAP vocabulary)."""

    EXCELLENT = "excellent"
    GOOD = "good"
    FAIR = "fair"
    POOR = "poor"


class VehicleStatus(StrEnum):
    """Availability of an inventory unit. Only ``available`` and ``in_transit`` units are offered to buyers."""

    AVAILABLE = "available"
    IN_TRANSIT = "in_transit"
    PENDING = "pending"
    SOLD = "sold"
    REMOVED = "removed"
    UNKNOWN = "unknown"

    @property
    def offerable(self) -> bool:
        """Whether a buyer agent may be told this unit can be bought."""
        return self in (VehicleStatus.AVAILABLE, VehicleStatus.IN_TRANSIT)

    @property
    def label(self) -> str:
        """Free-text status as AAP's ``status`` field shows it."""
        return {
            "available": "In Stock",
            "in_transit": "In Transit",
            "pending": "Pending",
            "sold": "Sold",
            "removed": "No Longer Available",
            "unknown": "Unknown",
        }[self.value]


TEXT_LIMITS: Mapping[str, int] = {
    "stock": 40,
    "make": 40,
    "model": 60,
    "trim": 100,
    "body": 40,
    "transmission": 40,
    "driveline": 40,
    "fuel": 40,
    "engine": 100,
    "exterior_color": 60,
    "interior_color": 60,
    "description": 8_000,
}
"""The most characters each text field of a vehicle holds. Each is served to anonymous shoppers: a feed once stored
a 120,000-character trim, and one car's answer was 142 KB."""
PHOTOS_MAX = 100
"""The most photos a vehicle has (each a :data:`~forecourt.domain.urls.WebLink`)."""
PRICE_MAX_MINOR = 10**12
"""The largest price, MSRP or list price in minor units (ten billion dollars): a larger amount is a typo or an
attack, and would not fit the database's 64-bit integers."""
MILEAGE_MAX = 10_000_000
"""The highest odometer reading (miles or kilometres)."""


class Vehicle(BaseModel):
    """One unit in a dealership's inventory: text within :data:`TEXT_LIMITS`, photos and page http(s) links."""

    model_config = ConfigDict(frozen=True)

    id: str
    dealership_id: str
    vin: str
    stock: str = Field(max_length=TEXT_LIMITS["stock"])
    year: int = Field(ge=1900, le=2100)
    make: str = Field(max_length=TEXT_LIMITS["make"])
    model: str = Field(max_length=TEXT_LIMITS["model"])
    trim: str = Field(default="", max_length=TEXT_LIMITS["trim"])
    condition: Condition
    body: str = Field(default="", max_length=TEXT_LIMITS["body"])
    transmission: str = Field(default="", max_length=TEXT_LIMITS["transmission"])
    driveline: str = Field(default="", max_length=TEXT_LIMITS["driveline"])
    fuel: str = Field(default="", max_length=TEXT_LIMITS["fuel"])
    engine: str = Field(default="", max_length=TEXT_LIMITS["engine"])
    exterior_color: str = Field(default="", max_length=TEXT_LIMITS["exterior_color"])
    interior_color: str = Field(default="", max_length=TEXT_LIMITS["interior_color"])
    msrp: Money | None = None
    list_price: Money | None = None
    price: Money
    mileage: Measure = Measure(value=0)
    status: VehicleStatus = VehicleStatus.AVAILABLE
    photos: tuple[WebLink, ...] = Field(default=(), max_length=PHOTOS_MAX)
    vdp_url: WebLink | None = None
    description: str = Field(default="", max_length=TEXT_LIMITS["description"])
    last_verified_at: AwareDatetime
    created_at: AwareDatetime | None = None
    updated_at: AwareDatetime | None = None
    sold_at: AwareDatetime | None = None

    @field_validator("vin")
    @classmethod
    def _valid_vin(cls, value: str) -> str:
        try:
            return normalize_vin(value)
        except VinError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("price", "msrp", "list_price")
    @classmethod
    def _price_in_range(cls, value: Money | None) -> Money | None:
        if value is not None and abs(value.amount_minor) > PRICE_MAX_MINOR:
            raise ValueError("larger than any vehicle's price")
        return value

    @field_validator("mileage")
    @classmethod
    def _mileage_in_range(cls, value: Measure) -> Measure:
        if value.value > MILEAGE_MAX:
            raise ValueError(f"more than {MILEAGE_MAX:,}")
        return value

    def card(self) -> VehicleCard:
        """What a list shows of this unit."""
        return VehicleCard(
            id=self.id,
            vin=self.vin,
            year=self.year,
            make=self.make,
            model=self.model,
            trim=self.trim,
            price=self.price,
            mileage=self.mileage,
            status=self.status,
            vdp_url=self.vdp_url,
        )


@dataclass(frozen=True, slots=True, weakref_slot=True)
class VehicleCard:
    """What a list of vehicles shows of each: enough to choose one (the whole unit is one ``get`` away).

    A compact search reads only these columns (``inventory.search`` with ``view: "compact"``, the MCP default).
    """

    id: str
    vin: str
    year: int
    make: str
    model: str
    trim: str
    price: Money
    mileage: Measure
    status: VehicleStatus
    vdp_url: str | None


class SortField(StrEnum):
    """Fields inventory results can be ordered by."""

    PRICE = "price"
    LIST_PRICE = "list_price"
    MSRP = "msrp"
    MILEAGE = "mileage"
    YEAR = "year"
    MAKE = "make"
    MODEL = "model"
    STOCK = "stock"
    LAST_VERIFIED_AT = "last_verified_at"


class InventoryFilters(BaseModel):
    """The AAP ``inventory.search`` filter block, with prices in minor units."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    make: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    trim: tuple[str, ...] = ()
    condition: tuple[Condition, ...] = ()
    transmission: tuple[str, ...] = ()
    fuel: tuple[str, ...] = ()
    driveline: tuple[str, ...] = ()
    body: tuple[str, ...] = ()
    exterior_color: tuple[str, ...] = ()
    interior_color: tuple[str, ...] = ()
    status: tuple[VehicleStatus, ...] = ()
    year_min: int | None = None
    year_max: int | None = None
    price_min_minor: int | None = Field(default=None, ge=0)
    price_max_minor: int | None = Field(default=None, ge=0)
    mileage_min: int | None = Field(default=None, ge=0)
    mileage_max: int | None = Field(default=None, ge=0)
    vin: str | None = None
    stock: str | None = None
    query: str | None = Field(default=None, max_length=200)
    include_unavailable: bool = False


class InventoryQuery(BaseModel):
    """A dealership-scoped inventory search."""

    model_config = ConfigDict(frozen=True)

    dealership_id: str
    filters: InventoryFilters = InventoryFilters()
    sort: SortField | None = None
    descending: bool = False
    offset: int = Field(default=0, ge=0)
    limit: int = Field(default=20, ge=1, le=1000)
    after: tuple[int | str, ...] | None = None
    """A keyset continuation: the sort value and id (the id alone, unsorted) of the previous page's last unit. The
    page then starts right after that unit, and ``offset`` only says how many came before it; ``None``: the page
    starts ``offset`` units into the result."""


class FacetCount(BaseModel):
    """One value of a term facet and how many units carry it."""

    value: str
    count: int


class RangeFacet(BaseModel):
    """Min and max of a numeric field across the matching set."""

    min: int | None
    max: int | None


class Facets(BaseModel):
    """Term counts and numeric ranges across a matching set."""

    total: int
    terms: dict[str, list[FacetCount]]
    ranges: dict[str, RangeFacet]


TOTAL_COUNTED_UP_TO = 100
"""How many matches a search counts from its page's start (or the page's length plus one, when larger): beyond
that its total is a lower bound (``total_exact`` False). A rooftop's 2,000 vehicles are never all counted to
show 20 of them; a filtered search that matches fewer gets its exact total."""


class SearchPage(BaseModel):
    """A page of search results with the size of the whole matching set.

    ``total`` is exact when ``total_exact``, else a lower bound (the store stops counting at
    :data:`TOTAL_COUNTED_UP_TO`, so that a count never reads a whole rooftop); either way it is larger than
    ``offset`` plus the page's length exactly when another page follows. ``after``: the key a next page starts after
    (:attr:`InventoryQuery.after`), when the sort has one.
    """

    items: list[Vehicle]
    total: int
    offset: int
    limit: int
    total_exact: bool = True
    after: tuple[int | str, ...] | None = None

    @property
    def has_more(self) -> bool:
        """Whether another page follows this one."""
        return self.offset + len(self.items) < self.total


@dataclass(frozen=True, slots=True)
class CardPage:
    """A page of a compact search: the units' cards and the size of the whole matching set (as in
    :class:`SearchPage`)."""

    items: list[VehicleCard]
    total: int
    offset: int
    limit: int
    total_exact: bool = True
    after: tuple[int | str, ...] | None = None


def vehicle_age_years(vehicle: Vehicle, now: datetime) -> int:
    """Model-year age of a vehicle at ``now`` (never negative)."""
    return max(now.year - vehicle.year, 0)
