"""Feed column names: the canonical vehicle field names and the aliases common dealer feeds use.

:data:`COLUMNS` is the one table: the importer maps headers with it and ``docs/import.md`` is generated
from it (``python -m forecourt.inventory_import.docs``), so the documentation cannot drift from the code.
Aliases cover the exports of dealer management systems and inventory syndication (the ``Stock #``,
``InternetPrice``, ``ExtColor``, ``ImageURLs`` style of header); matching ignores case, spaces and
punctuation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One vehicle field a feed can fill: its name, whether a row needs it, what it accepts, its aliases."""

    name: str
    required: bool
    accepts: str
    aliases: tuple[str, ...]


COLUMNS: tuple[Column, ...] = (
    Column("vin", True, "17-character VIN with a valid check digit (any case, spaces ignored)",
           ("VIN", "VIN Number", "Vehicle VIN", "VIN No", "Vehicle Identification Number")),
    Column("stock", False, "the dealer's stock number (default: the VIN's last 8 characters)",
           ("Stock #", "Stock Number", "Stock No", "StockNum", "Stock ID", "Stk", "Stk #", "Stock Nbr",
            "Vehicle Stock Number", "Dealer Stock Number")),
    Column("year", True, "model year, 1900 to next year + 1", ("Model Year", "Yr", "Vehicle Year", "Model Yr")),
    Column("make", True, "text", ("Manufacturer", "Brand", "Make Name", "Vehicle Make", "Division")),
    Column("model", True, "text", ("Model Name", "Vehicle Model")),
    Column("trim", False, "text", ("Series", "Trim Level", "Style", "Trim Name", "Vehicle Trim", "Submodel")),
    Column("condition", True, "`new`, `used` or `cpo`; also N/U/C, Pre-Owned, Certified, Certified Pre-Owned",
           ("Type", "New/Used", "New or Used", "Vehicle Condition", "Inventory Type", "Used/New", "Stock Type",
            "New/Used/CPO")),
    Column("price", True, "selling price in the dealership's currency: `27995`, `$27,995.00`, `27995 USD`, or "
           "JSON `{amount, currency}`; more than zero",
           ("Internet Price", "Selling Price", "Sale Price", "Special Price", "Asking Price", "Our Price",
            "Sales Price", "Sell Price", "Advertised Price", "Web Price", "Display Price")),
    Column("list_price", False, "as price", ("List Price", "Retail Price", "Book Value")),
    Column("msrp", False, "as price", ("Sticker Price", "Original MSRP", "MSRP Price", "Total MSRP")),
    Column("mileage", False, "odometer: `12345`, `12,345 mi`, `20000 km`, JSON `{value, unit}`; required for used "
           "and CPO vehicles; miles unless the cell or `mileage_unit` says km",
           ("Miles", "Odometer", "Odometer Reading", "Odometer Miles", "Mileage Value")),
    Column("mileage_km", False, "odometer in kilometres when the cell has no unit (used when `mileage` is absent)",
           ("Kilometers", "Kilometres", "KM", "Odometer KM", "Mileage KM")),
    Column("mileage_unit", False, "`mi`/`miles` or `km`/`kilometers`: the unit of a `mileage` cell without one",
           ("Odometer Unit", "Mileage Units", "Odometer Units", "Distance Unit")),
    Column("body", False, "free text, normalised to suv, pickup, sedan, coupe, hatchback, minivan, van, wagon, "
           "convertible where recognised", ("Body Style", "Body Type", "Body Description", "Vehicle Body")),
    Column("exterior_color", False, "text",
           ("Exterior Color", "Ext Color", "Exterior Colour", "Ext Colour", "Color", "Colour", "Exterior",
            "Exterior Color Description", "Color Exterior")),
    Column("interior_color", False, "text",
           ("Interior Color", "Int Color", "Interior Colour", "Int Colour", "Interior",
            "Interior Color Description", "Color Interior")),
    Column("transmission", False, "free text, normalised to automatic, manual, cvt where recognised",
           ("Trans", "Transmission Type", "Transmission Description")),
    Column("fuel", False, "free text, normalised to gas, diesel, hybrid, plug_in_hybrid, electric, flex_fuel",
           ("Fuel Type", "Engine Fuel Type")),
    Column("driveline", False, "free text, normalised to awd, 4wd, fwd, rwd", ("Drivetrain", "Drive Type", "Drive")),
    Column("engine", False, "text", ("Engine Description", "Engine Desc")),
    Column("photo_urls", False, "http(s) URLs separated by `|`, `,` or spaces, or a JSON list; other text dropped",
           ("Photos", "Photo URLs", "Image URLs", "Images", "Image List", "Photo URL", "Photo", "Image URL",
            "Picture URLs", "Pictures", "Photo URL List", "Image URL List", "Photo List")),
    Column("status", False, "available (In Stock, Active, For Sale, On Lot), in_transit (In Transit, On Order), "
           "pending (Sale Pending, On Hold, Deposit), sold, removed (Inactive, Deleted); default available",
           ("Vehicle Status", "Availability", "Stock Status", "Inventory Status", "Sale Status")),
    Column("sold_at", False, "date or time the vehicle sold (`2026-11-20`, `2026-11-20T15:30:00Z`, `11/20/2026`); "
           "kept only when the status is sold (default: the import's time)", ("Sold Date", "Date Sold", "Sale Date")),
    Column("vdp_url", False, "the vehicle's page on the dealer's site (http(s) only)",
           ("VDP", "VDP URL", "Vehicle URL", "Detail URL", "URL")),
    Column("description", False, "text", ("Comments", "Sellers Comments", "Dealer Comments", "Vehicle Description")),
)  # fmt: skip

CANONICAL: tuple[str, ...] = (
    "vin", "stock", "year", "make", "model", "trim", "condition", "price", "msrp", "mileage", "body",
    "exterior_color", "interior_color", "transmission", "fuel", "photo_urls", "status",
)  # fmt: skip
"""The public contract's column names (DESIGN.md)."""
EXTRA: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.name not in CANONICAL)
REQUIRED: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.required)
NOT_STORED: tuple[str, ...] = ("Date In Stock", "In Stock Date", "Inventory Date", "Date Added", "Date Modified",
                               "Last Modified", "Days In Stock", "Age")  # fmt: skip
"""Date and age columns of DMS exports that Forecourt recognises but does not store (reported as ignored)."""

_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def _key(header: str) -> str:
    return _NOT_ALNUM.sub("", header.strip().lower())


_LOOKUP: dict[str, str] = {_key(alias): c.name for c in COLUMNS for alias in (c.name, *c.aliases)}


def canonical_column(header: str) -> str | None:
    """The vehicle field a feed column feeds (``"Stock #"`` → ``stock``), or None when unknown.

    Matching ignores case, spaces, underscores and punctuation, so ``exterior_color``, ``Exterior Color``
    and ``ExteriorColor`` are the same column.
    """
    return _LOOKUP.get(_key(header))
