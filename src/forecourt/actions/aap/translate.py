"""Domain objects to AAP v0.1 payloads (and AAP filters to store queries).

Money leaves as AAP major units through :meth:`Money.to_aap` (exact). Pricing follows the AAP field
meanings: ``list_price`` is the advertised base price, ``price`` the FTC out-the-door amount (selling
price + the dealership's documentation fee + sales tax at the dealership's rate), and
``offered_price`` (only when the buyer gave a ``zip``) the list price plus tax. Forecourt has one tax
rate per dealership (``tax_rate_bps``); a per-ZIP desking table is out of scope for v0.1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from forecourt.actions.representations import WEEKDAYS
from forecourt.domain.money import Money
from forecourt.domain.tenancy import DayHours, Dealership
from forecourt.domain.timeutil import rfc3339
from forecourt.domain.vehicle import (
    Condition,
    Facets,
    InventoryFilters,
    InventoryQuery,
    SortField,
    Vehicle,
)

_ZIP = re.compile(r"^\d{5}(-\d{4})?$")
_E164 = re.compile(r"^\+[1-9]\d{1,14}$")
_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_TERMS = ("make", "model", "trim", "transmission", "fuel", "driveline", "body", "exterior_color", "interior_color")
_FACET_NAMES = {
    "make": "makes",
    "model": "models",
    "trim": "trims",
    "body": "bodies",
    "fuel": "fuels",
    "transmission": "transmissions",
    "driveline": "drivelines",
    "exterior_color": "exterior_colors",
    "interior_color": "interior_colors",
    "condition": "conditions",
}
_CAPABILITIES = ("test_drive", "financing", "trade_in", "service", "delivery", "remote_delivery")
_SORTS = {"offered_price": SortField.LIST_PRICE}


def tax_minor(amount_minor: int, rate_bps: int) -> int:
    """Sales tax on ``amount_minor`` at ``rate_bps`` basis points, rounded half up to the minor unit."""
    return (amount_minor * rate_bps + 5_000) // 10_000


def otd_minor(selling_minor: int, dealer: Dealership) -> int:
    """Out-the-door amount for a selling price: + documentation fee, + tax on both at the dealership's rate."""
    taxable = selling_minor + dealer.doc_fee_minor
    return taxable + tax_minor(taxable, dealer.tax_rate_bps)


def selling_bound(otd_bound_minor: int, dealer: Dealership, *, upper: bool) -> int:
    """The selling-price bound whose out-the-door price is the buyer's bound (filters are on ``price``)."""
    taxable = (otd_bound_minor * 10_000) // (10_000 + dealer.tax_rate_bps)
    selling = max(taxable - dealer.doc_fee_minor, 0)
    # Nudge by a cent so rounding of the tax never admits a unit just over (or drops one just at) the bound.
    while upper and selling > 0 and otd_minor(selling, dealer) > otd_bound_minor:
        selling -= 1
    while upper and otd_minor(selling + 1, dealer) <= otd_bound_minor:
        selling += 1
    while not upper and selling > 0 and otd_minor(selling - 1, dealer) >= otd_bound_minor:
        selling -= 1
    while not upper and otd_minor(selling, dealer) < otd_bound_minor:
        selling += 1
    return selling


def out_the_door(vehicle: Vehicle, dealer: Dealership) -> Money:
    """The FTC out-the-door price: selling price + documentation fee + tax at the dealership's rate."""
    return Money(amount_minor=otd_minor(vehicle.price.amount_minor, dealer), currency=vehicle.price.currency)


def offered_price(vehicle: Vehicle, dealer: Dealership) -> Money:
    """AAP ``offered_price``: list price plus tax (only ever shown when the buyer supplied a ZIP)."""
    base = (vehicle.list_price or vehicle.price).amount_minor
    return Money(amount_minor=base + tax_minor(base, dealer.tax_rate_bps), currency=vehicle.price.currency)


def _uri(text: str | None) -> bool:
    return bool(text) and str(text).startswith(("https://", "http://"))


def vehicle_to_aap(vehicle: Vehicle, dealer: Dealership, *, zip_code: str | None = None) -> dict[str, Any]:
    """An AAP Vehicle/VehicleDetail; availability claims always carry ``last_verified_at``."""
    out: dict[str, Any] = {
        "dealer_id": dealer.id,
        "vehicle_id": vehicle.id,
        "vin": vehicle.vin,
        "stock": vehicle.stock,
        "year": vehicle.year,
        "make": vehicle.make,
        "model": vehicle.model,
        "condition": vehicle.condition.value,
        "mileage": vehicle.mileage.to("mi").value,
        "price": out_the_door(vehicle, dealer).to_aap(),
        "list_price": (vehicle.list_price or vehicle.price).to_aap(),
        "status": vehicle.status.label,
        "last_verified_at": rfc3339(vehicle.last_verified_at),
    }
    if vehicle.msrp is not None:
        out["msrp"] = vehicle.msrp.to_aap()
    if zip_code:
        out["offered_price"] = offered_price(vehicle, dealer).to_aap()
        out["zip"] = zip_code
    for key in ("trim", "body", "transmission", "driveline", "fuel", "engine", "exterior_color", "interior_color"):
        value = getattr(vehicle, key)
        if value:
            out[key] = value
    if vehicle.description:
        out["description"] = vehicle.description
    photos = [p for p in vehicle.photos if _uri(p)]
    if photos:
        out["photos"] = photos
    if _uri(vehicle.vdp_url):
        out["vdp_url"] = vehicle.vdp_url
    return out


def _day(hours: Mapping[str, DayHours], day: str) -> dict[str, str] | None:
    lookup = {k.strip().lower(): v for k, v in hours.items()}
    h = lookup.get(day) or lookup.get(day[:3])
    if h is None or not h.open or not h.close or not _HHMM.match(h.open) or not _HHMM.match(h.close):
        return None
    return {"open": h.open, "close": h.close}


def _contacts(dealer: Dealership) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    phones = [
        {"name": name.capitalize(), "phone": number} for name, number in dealer.phones.items() if _E164.match(number)
    ]
    emails = [{"name": "Sales", "email": dealer.email}] if dealer.email else []
    return phones, emails


def dealer_to_aap(dealer: Dealership, *, legal_name: str | None = None) -> dict[str, Any]:
    """AAP DealerInformation from the dealership profile."""
    a = dealer.address
    address: dict[str, Any] = {}
    if a.street:
        address["address_line_1"] = a.street
    if a.city:
        address["city"] = a.city
    if a.region:
        address["state"] = a.region
    if _ZIP.match(a.postal_code or ""):
        address["zip"] = a.postal_code
    phones, emails = _contacts(dealer)
    out: dict[str, Any] = {
        "dealer_id": dealer.id,
        "legal_name": legal_name or dealer.name,
        "trade_name": dealer.name,
        "brands": list(dealer.brands),
        "address": address,
        "phones": phones,
        "emails": emails,
        "schedule": {day: _day(dealer.sales_hours, day) for day in WEEKDAYS},
        "timezone": dealer.timezone,
        "capabilities": {c: c in dealer.capabilities for c in _CAPABILITIES},
    }
    if _uri(dealer.website):
        out["website"] = dealer.website
    return out


def sales_phone(dealer: Dealership) -> str | None:
    """The dealership's E.164 sales number, if it has one."""
    for name in ("sales", "main"):
        number = dealer.phones.get(name)
        if number and _E164.match(number):
            return number
    return next((n for n in dealer.phones.values() if _E164.match(n)), None)


def _bound(value: Any, dealer: Dealership, *, upper: bool) -> int | None:
    if value is None:
        return None
    return selling_bound(Money.from_major(value, dealer.currency).amount_minor, dealer, upper=upper)


def filters_to_query(
    dealer: Dealership,
    filters: Mapping[str, Any],
    *,
    skip: int = 0,
    limit: int = 20,
    sort: Mapping[str, Any] | None = None,
) -> InventoryQuery:
    """An AAP ``filters`` block as a store query over offerable units only (sold units are never offered)."""
    field = (sort or {}).get("field")
    sort_field = _SORTS.get(str(field)) or (SortField(field) if field else None)
    return InventoryQuery(
        dealership_id=dealer.id,
        filters=InventoryFilters(
            **{k: tuple(filters.get(k) or ()) for k in _TERMS},
            condition=tuple(Condition(c) for c in filters.get("condition") or ()),
            year_min=filters.get("year_min"),
            year_max=filters.get("year_max"),
            price_min_minor=_bound(filters.get("price_min"), dealer, upper=False),
            price_max_minor=_bound(filters.get("price_max"), dealer, upper=True),
            mileage_max=filters.get("mileage_max"),
            vin=filters.get("vin"),
            stock=filters.get("stock"),
            query=filters.get("query"),
            include_unavailable=False,
        ),
        sort=sort_field,
        descending=(sort or {}).get("order") == "desc",
        offset=skip,
        limit=limit,
    )


def facets_to_aap(facets: Facets, dealer: Dealership) -> dict[str, Any]:
    """AAP Facets from store facets; the price range is out-the-door, in major units."""
    out: dict[str, Any] = {}
    for name, counts in facets.terms.items():
        key = _FACET_NAMES.get(name)
        if key is not None:
            out[key] = [{"value": c.value, "count": c.count} for c in counts]
    year, price, mileage = (facets.ranges.get(k) for k in ("year", "price", "mileage"))
    if year and year.min is not None and year.max is not None:
        out["year_range"] = {"min": year.min, "max": year.max}
    if price and price.min is not None and price.max is not None:
        low, high = (Money.of(otd_minor(v, dealer), dealer.currency).to_aap()["amount"] for v in (price.min, price.max))
        out["price_range"] = {"min": low, "max": high}
    if mileage and mileage.min is not None and mileage.max is not None:
        out["mileage_range"] = {"min": mileage.min, "max": mileage.max}
    return out
