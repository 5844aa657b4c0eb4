"""Validating raw feed records into typed vehicle values, rejecting bad rows with a reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forecourt.domain.vehicle import Condition
from forecourt.domain.vin import VinError, normalize_vin
from forecourt.inventory_import.reader import RawRecord
from forecourt.inventory_import.report import RejectedRow
from forecourt.inventory_import.values import (
    FieldError,
    normalize_vocab,
    parse_condition,
    parse_mileage,
    parse_price,
    parse_status,
    parse_year,
    split_photos,
    text,
)

_TEXT_FIELDS = ("stock", "make", "model", "trim", "exterior_color", "interior_color", "engine", "description")
_VOCAB_FIELDS = ("body", "transmission", "fuel", "driveline")


@dataclass(frozen=True, slots=True)
class FeedRow:
    """A valid feed row: its line, normalised VIN, and the vehicle fields the feed gave (parsed)."""

    line: int
    vin: str
    values: dict[str, Any]


def _required(record: RawRecord, name: str) -> Any:
    value = record.values.get(name)
    if value is None or not text(value):
        raise FieldError("missing_field", name, f"required field {name} is empty")
    return value


def _parse(record: RawRecord, vin: str, currency: str, year_max: int) -> dict[str, Any]:
    values: dict[str, Any] = {"vin": vin}
    values["year"] = parse_year(_required(record, "year"), year_max)
    values["make"] = text(_required(record, "make"))
    values["model"] = text(_required(record, "model"))
    condition = parse_condition(_required(record, "condition"))
    values["condition"] = condition
    price = parse_price(_required(record, "price"), currency)
    if price.amount_minor <= 0:
        raise FieldError("bad_price", "price", "price must be greater than zero")
    values["price"] = price
    raw = record.values
    for name in ("msrp", "list_price"):
        if name in raw:
            values[name] = parse_price(raw[name], currency, name)
    if "mileage" in raw:
        values["mileage"] = parse_mileage(raw["mileage"])
    elif condition is not Condition.NEW:
        raise FieldError("missing_field", "mileage", "mileage is required for a used vehicle")
    if "status" in raw:
        values["status"] = parse_status(raw["status"])
    if "photo_urls" in raw:
        values["photos"] = split_photos(raw["photo_urls"])
    if "vdp_url" in raw and text(raw["vdp_url"]).lower().startswith(("https://", "http://")):
        values["vdp_url"] = text(raw["vdp_url"])
    values.update({name: text(raw[name]) for name in _TEXT_FIELDS if name in raw})
    values.update({name: normalize_vocab(name, raw[name]) for name in _VOCAB_FIELDS if name in raw})
    return values


def parse_record(record: RawRecord, *, currency: str, year_max: int) -> FeedRow | RejectedRow:
    """The typed values of one record, or why it is rejected (bad VIN first, then the first bad field).

    Args:
        record: The raw record.
        currency: ISO 4217 code prices are in (the dealership's).
        year_max: Newest model year accepted.
    """
    raw_vin = text(record.values.get("vin"))
    if not raw_vin:
        return RejectedRow(line=record.line, code="missing_field", field="vin", reason="required field vin is empty")
    try:
        vin = normalize_vin(raw_vin)
    except VinError as exc:
        return RejectedRow(
            line=record.line, code=f"invalid_vin.{exc.reason}", field="vin", reason=f"invalid VIN: {exc}", vin=raw_vin
        )
    try:
        values = _parse(record, vin, currency, year_max)
    except FieldError as exc:
        return RejectedRow(line=record.line, code=exc.code, field=exc.field, reason=exc.reason, vin=vin)
    return FeedRow(record.line, vin, values)
