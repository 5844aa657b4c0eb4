"""Parsing feed cells into vehicle values: prices, numbers, conditions, statuses and vocabularies."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from forecourt import caching
from forecourt.domain.measure import Measure
from forecourt.domain.money import Money, currency_exponent
from forecourt.domain.urls import LINK_MAX, link_problem
from forecourt.domain.vehicle import MILEAGE_MAX, PHOTOS_MAX, PRICE_MAX_MINOR, TEXT_LIMITS, Condition, VehicleStatus
from forecourt.inventory_import.construct import construct
from forecourt.inventory_import.errors import FieldError

_ISO_CURRENCY = re.compile(r"^[A-Z]{3}$")
_AMOUNT = re.compile(r"^(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
_CURRENCY_MARKS = ("US$", "$", "€", "£", "¥")
_MILEAGE = re.compile(r"^(?P<num>[\d,]+(?:\.\d+)?)\s*(?P<unit>mi|miles?|km|kms|kilometers?|kilometres?)?\.?$", re.I)

_CONDITIONS: dict[str, Condition] = {
    "n": Condition.NEW, "new": Condition.NEW,
    "u": Condition.USED, "used": Condition.USED, "preowned": Condition.USED, "pre-owned": Condition.USED,
    "cpo": Condition.CPO, "certified": Condition.CPO, "certifiedpreowned": Condition.CPO,
    "certified pre-owned": Condition.CPO, "c": Condition.CPO,
}  # fmt: skip
_STATUSES: dict[str, VehicleStatus] = {
    "available": VehicleStatus.AVAILABLE, "instock": VehicleStatus.AVAILABLE, "active": VehicleStatus.AVAILABLE,
    "forsale": VehicleStatus.AVAILABLE, "onlot": VehicleStatus.AVAILABLE,
    "intransit": VehicleStatus.IN_TRANSIT, "transit": VehicleStatus.IN_TRANSIT, "onorder": VehicleStatus.IN_TRANSIT,
    "pending": VehicleStatus.PENDING, "salepending": VehicleStatus.PENDING, "onhold": VehicleStatus.PENDING,
    "hold": VehicleStatus.PENDING, "deposit": VehicleStatus.PENDING,
    "sold": VehicleStatus.SOLD,
    "removed": VehicleStatus.REMOVED, "inactive": VehicleStatus.REMOVED, "deleted": VehicleStatus.REMOVED,
    "nolongeravailable": VehicleStatus.REMOVED,
}  # fmt: skip
# Free-text vocabularies mapped onto the values the demo data and facets use; first match wins.
_VOCAB: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "transmission": ((("cvt", "continuously variable"), "cvt"), (("manual", "m/t", "stick"), "manual"),
                     (("auto", "a/t", "dct", "dual-clutch", "single-speed", "1-speed"), "automatic")),
    "fuel": ((("plug-in", "plug in", "phev"), "plug_in_hybrid"), (("hybrid",), "hybrid"),
             (("electric", "bev"), "electric"), (("diesel",), "diesel"), (("flex", "e85"), "flex_fuel"),
             (("gas", "petrol", "unleaded"), "gas")),
    "driveline": ((("awd", "all wheel", "all-wheel", "xdrive", "4matic", "quattro"), "awd"),
                  (("4wd", "4x4", "four wheel", "four-wheel"), "4wd"),
                  (("fwd", "front wheel", "front-wheel"), "fwd"), (("rwd", "rear wheel", "rear-wheel", "4x2"), "rwd")),
    "body": ((("sport utility", "suv", "crossover"), "suv"), (("pickup", "truck", "crew cab", "double cab"), "pickup"),
             (("minivan", "passenger van"), "minivan"), (("hatch",), "hatchback"), (("convertible", "cabrio"),
             "convertible"), (("coupe",), "coupe"), (("wagon",), "wagon"), (("sedan", "4dr car"), "sedan"),
             (("van",), "van")),
}  # fmt: skip
_EXACT_VOCAB: dict[str, dict[str, str]] = {"fuel": {"ev": "electric", "g": "gas"}}
_CACHED_CELL = 200
"""Only cells this short are memoised: repeated vocabulary is short, and a memo must not hold a feed's junk."""


def text(value: Any) -> str:
    """A cell as stripped text (``None`` → ``""``); numbers are written without a trailing ``.0``."""
    if type(value) is str:
        return " ".join(value.split())
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split())


def bounded_text(value: Any, field: str) -> str:
    """A text cell (see :func:`text`) for a vehicle's text ``field``, within its limit.

    Raises:
        FieldError: ``too_long`` beyond :data:`~forecourt.domain.vehicle.TEXT_LIMITS` for ``field``.
    """
    raw = text(value)
    limit = TEXT_LIMITS[field]
    if len(raw) > limit:
        raise FieldError("too_long", field, f"{field} is longer than {limit:,} characters")
    return raw


def parse_price(value: Any, currency: str, field: str = "price") -> Money:
    """A price in major units (``"$27,995.00"``, ``27995``, ``"27995 USD"``) as exact minor units.

    Raises:
        FieldError: ``bad_price`` for text that is not an amount, a negative amount, more decimals
            than the currency has, or more than :data:`~forecourt.domain.vehicle.PRICE_MAX_MINOR`.
    """
    if type(value) is str and len(value) <= _CACHED_CELL:
        return _parse_text_price(value, currency, field)
    if isinstance(value, dict) and "amount" in value:
        return parse_price(value["amount"], str(value.get("currency") or currency), field)
    return _parse_price(value, currency, field)


@caching.memo("inventory_import.text_prices", 65_536)
def _parse_text_price(value: str, currency: str, field: str) -> Money:
    """Prices repeat across a feed (and Money is immutable), so parsed text prices are memoised."""
    return _parse_price(value, currency, field)


def _parse_price(value: Any, currency: str, field: str) -> Money:
    if isinstance(value, bool):
        raise FieldError("bad_price", field, f"{field} is not an amount")
    if isinstance(value, (int, float)):
        raw: str = repr(value) if isinstance(value, float) else str(value)
    else:
        raw = text(value)
    for mark in (*_CURRENCY_MARKS, currency):
        raw = raw.removeprefix(mark).removesuffix(mark).strip()
    if not _AMOUNT.fullmatch(raw):
        raise FieldError("bad_price", field, f"{field} is not an amount in {currency}")
    amount = Decimal(raw.replace(",", ""))
    if amount.scaleb(currency_exponent(currency)) > PRICE_MAX_MINOR:
        raise FieldError("bad_price", field, f"{field} is larger than any vehicle's price")
    if _ISO_CURRENCY.fullmatch(currency):
        scaled = amount.scaleb(currency_exponent(currency))
        if scaled == scaled.to_integral_value():
            # The amount and the currency are checked above: the model's own checks would only repeat them.
            return construct(Money, {"amount_minor": int(scaled), "currency": currency})
    try:
        return Money.from_major(amount, currency)
    except (ValueError, InvalidOperation) as exc:
        raise FieldError("bad_price", field, f"{field} has more decimal places than {currency} allows") from exc


def parse_year(value: Any, year_max: int) -> int:
    """A model year between 1900 and ``year_max``."""
    if type(value) is str:
        return _parse_text_year(value, year_max)
    return _parse_year(value, year_max)


@caching.memo("inventory_import.text_years", 4096)
def _parse_text_year(value: str, year_max: int) -> int:
    """A feed repeats a few dozen model years, so parsed text years are memoised (failures are not)."""
    return _parse_year(value, year_max)


def _parse_year(value: Any, year_max: int) -> int:
    number = _integer(value, "year")
    if not 1900 <= number <= year_max:
        raise FieldError("bad_number", "year", f"year must be between 1900 and {year_max}")
    return number


def _integer(value: Any, field: str) -> int:
    raw = text(value).replace(",", "")
    try:
        number = Decimal(raw)
    except InvalidOperation as exc:
        raise FieldError("bad_number", field, f"{field} is not a number") from exc
    if not number.is_finite() or number != number.to_integral_value():
        raise FieldError("bad_number", field, f"{field} is not a whole number")
    return int(number)


def parse_mileage(value: Any, default_unit: str = "mi") -> Measure:
    """Odometer reading: ``12345``, ``"12,345 mi"``, ``"20000 km"`` or ``{"value": 12345, "unit": "mi"}``.

    A reading without a unit is in ``default_unit`` (``mi`` or ``km``).
    """
    if isinstance(value, dict) and "value" in value:
        unit = "km" if text(value.get("unit") or default_unit).lower().startswith("k") else "mi"
        return Measure(value=parse_mileage(value["value"]).value, unit=unit)
    match = _MILEAGE.fullmatch(text(value))
    if match is None:
        raise FieldError("bad_number", "mileage", "mileage is not a distance")
    unit = "km" if (match["unit"] or default_unit).lower().startswith("k") else "mi"
    number = Decimal(match["num"].replace(",", ""))
    if number > MILEAGE_MAX:
        raise FieldError("bad_number", "mileage", f"mileage is more than {MILEAGE_MAX:,}")
    # The pattern admits only unsigned numbers and the unit is one of the two: nothing left to validate.
    return construct(Measure, {"value": int(number.to_integral_value()), "unit": unit})


def parse_distance_unit(value: Any) -> str:
    """``mi``/``miles``/``mile`` → ``mi``; ``km``/``kms``/``kilometers``/``kilometres`` → ``km``."""
    key = text(value).lower().rstrip(".")
    if key in ("mi", "mile", "miles"):
        return "mi"
    if key in ("km", "kms", "kilometer", "kilometers", "kilometre", "kilometres"):
        return "km"
    raise FieldError("unknown_unit", "mileage_unit", "mileage_unit must be mi or km")


_DATE_FORMATS = ("%m/%d/%Y", "%m/%d/%Y %H:%M", "%m/%d/%Y %H:%M:%S", "%Y/%m/%d")


def parse_date(value: Any, field: str) -> datetime:
    """A date or time (ISO 8601, ``MM/DD/YYYY`` with an optional time) as an aware UTC time.

    A date alone is midnight UTC; a time without an offset is taken as UTC.
    """
    raw = text(value)
    parsed: datetime | None = None
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        for fmt in _DATE_FORMATS:
            try:
                parsed = datetime.strptime(raw, fmt)
                break
            except ValueError:
                continue
    if parsed is None:
        raise FieldError("bad_date", field, f"{field} is not a date")
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def parse_condition(value: Any) -> Condition:
    """``N/U/New/Used/Pre-Owned/CPO/Certified`` (any case) → the AAP condition."""
    key = text(value).lower()
    found = _CONDITIONS.get(key) or _CONDITIONS.get(key.replace(" ", ""))
    if found is None:
        raise FieldError("unknown_condition", "condition", "condition must be new, used or certified (CPO)")
    return found


def parse_status(value: Any) -> VehicleStatus:
    """Feed availability words (``In Stock``, ``In Transit``, ``Sale Pending``, ``Sold``...) → a status."""
    key = re.sub(r"[^a-z]", "", text(value).lower())
    found = _STATUSES.get(key)
    if found is None:
        raise FieldError("unknown_status", "status", "status is not one of available, in transit, pending, sold")
    return found


def normalize_vocab(field: str, value: Any) -> str:
    """See :func:`_normalize_vocab`; short text cells (the usual case, and highly repetitive in a feed) are memoised.

    Raises:
        FieldError: ``too_long`` when the kept text is beyond the field's limit.
    """
    if type(value) is str and len(value) <= _CACHED_CELL:
        found = _normalize_text_vocab(field, value)
    else:
        found = _normalize_vocab(field, value)
    if len(found) > TEXT_LIMITS[field]:
        raise FieldError("too_long", field, f"{field} is longer than {TEXT_LIMITS[field]:,} characters")
    return found


@caching.memo("inventory_import.text_vocabularies", 4096)
def _normalize_text_vocab(field: str, value: str) -> str:
    return _normalize_vocab(field, value)


def _normalize_vocab(field: str, value: Any) -> str:
    """Map free text for ``transmission``, ``fuel``, ``driveline`` or ``body`` onto a small vocabulary.

    Unrecognised text is kept, lower-cased, so nothing a dealer sends is lost.
    """
    raw = text(value).lower()
    exact = _EXACT_VOCAB.get(field, {}).get(raw)
    if exact:
        return exact
    for needles, canonical in _VOCAB.get(field, ()):
        if any(n in raw for n in needles):
            return canonical
    return raw


def split_photos(value: Any) -> tuple[str, ...]:
    """Photo URLs from a list, or text separated by pipes, commas or whitespace; only http(s) URLs are kept."""
    if isinstance(value, (list, tuple)):
        items = [text(v) for v in value]
    else:
        raw = str(value or "").strip()
        if "|" in raw:
            items = raw.split("|")
        elif "," in raw:
            items = _rejoin(raw.split(","))
        else:
            items = raw.split()
    urls = (item.strip() for item in items)
    return tuple(u for u in urls if u.lower().startswith(("https://", "http://")))


def parse_photos(value: Any) -> tuple[str, ...]:
    """The photos of :func:`split_photos`, each a link that may be published (``javascript:`` and other
    schemes are left out, as before).

    Raises:
        FieldError: ``too_many`` beyond :data:`~forecourt.domain.vehicle.PHOTOS_MAX`; ``too_long`` for a link
            beyond :data:`~forecourt.domain.urls.LINK_MAX` characters; ``bad_url`` for an http(s) link with
            credentials, no host, spaces or control characters.
    """
    photos = split_photos(value)
    if len(photos) > PHOTOS_MAX:
        raise FieldError("too_many", "photo_urls", f"more than {PHOTOS_MAX} photos")
    for photo in photos:
        _check_link(photo, "photo_urls")
    return photos


def parse_page_link(value: Any) -> str | None:
    """A vehicle's page (``vdp_url``): an http(s) link, or ``None`` for a cell that is not one (left out, as before).

    Raises:
        FieldError: as :func:`parse_photos` for a broken http(s) link.
    """
    raw = text(value)
    if not raw.lower().startswith(("https://", "http://")):
        return None
    return _check_link(raw, "vdp_url")


def _check_link(url: str, field: str) -> str:
    problem = link_problem(url)
    if problem == "too_long":
        raise FieldError("too_long", field, f"a link is longer than {LINK_MAX:,} characters")
    if problem is not None:
        raise FieldError("bad_url", field, f"a link is not a public http(s) link ({problem})")
    return url


def _rejoin(pieces: list[str]) -> list[str]:
    """Undo a comma split inside a URL (``.../w_400,h_300/...``): a piece that is not a URL continues the last."""
    items: list[str] = []
    for piece in pieces:
        if items and not piece.strip().lower().startswith(("https://", "http://")):
            items[-1] += "," + piece
        else:
            items.append(piece)
    return items


_NUMBER_TEXT = re.compile(r"^[-+]?(?:\d[\d,]*)?(?:\.\d+)?$")


def value_class(value: Any) -> str:
    """The shape of a cell without its content, for error reports (``"words (11 characters)"``, ``"empty"``).

    Feed cells may hold anything a dealer typed, personal data included, so reports describe a value
    instead of repeating it.
    """
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "negative number" if value < 0 else "decimal number" if isinstance(value, float) else "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return f"list of {len(value)}"
    raw = str(value).strip()
    if not raw:
        return "empty"
    return f"{_text_kind(raw)} ({len(raw)} characters)"


def _text_kind(raw: str) -> str:
    if any(c.isdigit() for c in raw) and _NUMBER_TEXT.fullmatch(raw):
        return "negative number" if raw.startswith("-") else "decimal number" if "." in raw else "number"
    if raw.startswith(_CURRENCY_MARKS) or raw.endswith(_CURRENCY_MARKS):
        return "amount with a currency sign"
    if raw.lower().startswith(("https://", "http://")):
        return "URL"
    letters = any(c.isalpha() for c in raw)
    digits = any(c.isdigit() for c in raw)
    if letters and digits:
        return "letters and digits"
    if letters:
        return "words" if all(c.isalpha() or c in " -'." for c in raw) else "text"
    return "symbols" if not digits else "digits and symbols"
