"""Feed column names: the canonical vehicle field names and the aliases common dealer feeds use."""

from __future__ import annotations

import re

CANONICAL: tuple[str, ...] = (
    "vin", "stock", "year", "make", "model", "trim", "condition", "price", "msrp", "mileage", "body",
    "exterior_color", "interior_color", "transmission", "fuel", "photo_urls", "status",
)  # fmt: skip
EXTRA: tuple[str, ...] = ("list_price", "driveline", "engine", "vdp_url", "description")
REQUIRED: tuple[str, ...] = ("vin", "year", "make", "model", "condition", "price")

_ALIASES: dict[str, tuple[str, ...]] = {
    "vin": ("vin", "vinnumber", "vehiclevin"),
    "stock": ("stock", "stocknumber", "stockno", "stocknum", "stockid"),
    "year": ("year", "modelyear", "yr"),
    "make": ("make", "manufacturer", "brand"),
    "model": ("model", "modelname"),
    "trim": ("trim", "series", "trimlevel", "style"),
    "condition": ("condition", "type", "newused", "neworused", "vehiclecondition", "inventorytype", "usednew"),
    "price": ("price", "internetprice", "sellingprice", "saleprice", "specialprice", "askingprice", "ourprice"),
    "list_price": ("listprice", "retailprice", "bookvalue"),
    "msrp": ("msrp", "stickerprice", "originalmsrp"),
    "mileage": ("mileage", "miles", "odometer", "odometerreading"),
    "body": ("body", "bodystyle", "bodytype"),
    "exterior_color": ("exteriorcolor", "extcolor", "exteriorcolour", "color", "colour"),
    "interior_color": ("interiorcolor", "intcolor", "interiorcolour"),
    "transmission": ("transmission", "trans", "transmissiontype"),
    "fuel": ("fuel", "fueltype"),
    "driveline": ("driveline", "drivetrain", "drivetype", "drive"),
    "engine": ("engine", "enginedescription", "enginedesc"),
    "photo_urls": ("photourls", "photos", "imageurls", "images", "imagelist", "photourl", "photo", "imageurl"),
    "status": ("status", "vehiclestatus", "availability"),
    "vdp_url": ("vdpurl", "vdp", "vehicleurl", "detailurl", "url"),
    "description": ("description", "comments", "sellerscomments", "dealercomments", "vehicledescription"),
}
_LOOKUP: dict[str, str] = {alias: field for field, aliases in _ALIASES.items() for alias in aliases}
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def canonical_column(header: str) -> str | None:
    """The vehicle field a feed column feeds (``"Stock #"`` → ``stock``), or None when unknown.

    Matching ignores case, spaces, underscores and punctuation, so ``exterior_color``, ``Exterior Color``
    and ``ExteriorColor`` are the same column.
    """
    return _LOOKUP.get(_NOT_ALNUM.sub("", header.strip().lower()))
