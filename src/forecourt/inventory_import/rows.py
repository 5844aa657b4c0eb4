"""Validating raw feed records into typed vehicle values, rejecting bad rows with every reason found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from forecourt.domain.errors import VinError
from forecourt.domain.vehicle import Condition, VehicleStatus
from forecourt.domain.vin import normalize_vin
from forecourt.inventory_import.errors import FieldError
from forecourt.inventory_import.reader import RawRecord
from forecourt.inventory_import.report import RejectedRow, RowError
from forecourt.inventory_import.values import (
    bounded_text,
    normalize_vocab,
    parse_condition,
    parse_date,
    parse_distance_unit,
    parse_mileage,
    parse_page_link,
    parse_photos,
    parse_price,
    parse_status,
    parse_year,
    text,
    value_class,
)

_TEXT_FIELDS = ("stock", "trim", "exterior_color", "interior_color", "engine", "description")  # make, model: required
_VOCAB_FIELDS = ("body", "transmission", "fuel", "driveline")

Parser = Callable[[Any, str, int], Any]


@dataclass(frozen=True, slots=True)
class FeedRow:
    """A valid feed row: its line, normalised VIN, and the vehicle fields the feed gave (parsed)."""

    line: int
    vin: str
    values: dict[str, Any]


def _positive_price(value: Any, currency: str, year_max: int) -> Any:
    del year_max
    price = parse_price(value, currency)
    if price.amount_minor <= 0:
        raise FieldError("bad_price", "price", "price must be greater than zero")
    return price


def _year(value: Any, currency: str, year_max: int) -> int:
    del currency
    return parse_year(value, year_max)


def _make(value: Any, currency: str, year_max: int) -> str:
    del currency, year_max
    return bounded_text(value, "make")


def _model(value: Any, currency: str, year_max: int) -> str:
    del currency, year_max
    return bounded_text(value, "model")


def _condition(value: Any, currency: str, year_max: int) -> Condition:
    del currency, year_max
    return parse_condition(value)


_REQUIRED: tuple[tuple[str, Parser], ...] = (
    ("year", _year), ("make", _make), ("model", _model), ("condition", _condition), ("price", _positive_price),
)  # fmt: skip


class _Row:
    """The values and errors of one record being parsed."""

    __slots__ = ("errors", "raw", "record", "values")

    def __init__(self, record: RawRecord, vin: str) -> None:
        self.record = record
        self.raw = record.values
        self.values: dict[str, Any] = {"vin": vin}
        self.errors: list[RowError] = []

    def fail(self, exc: FieldError, name: str) -> None:
        self.errors.append(_error(self.record, exc.code, exc.reason, exc.field or name, self.raw.get(name)))

    def take(self, name: str, parse: Callable[[Any], Any], target: str | None = None) -> None:
        try:
            self.values[target or name] = parse(self.raw[name])
        except FieldError as exc:
            self.fail(exc, name)


def _error(record: RawRecord, code: str, reason: str, name: str | None, value: Any) -> RowError:
    return RowError(
        line=record.line, code=code, reason=reason, column=record.column(name), field=name,
        value_class=value_class(value),
    )  # fmt: skip


def _parse(record: RawRecord, vin: str, currency: str, year_max: int) -> _Row:
    row = _Row(record, vin)
    raw, values = row.raw, row.values
    for name, parse in _REQUIRED:
        value = raw.get(name)
        if value is None or not text(value):
            row.errors.append(_error(record, "missing_field", f"required field {name} is empty", name, value))
            continue
        try:
            values[name] = parse(value, currency, year_max)
        except FieldError as exc:
            row.fail(exc, name)
    _optional(row, currency)
    for name in _TEXT_FIELDS:
        if name in raw:
            row.take(name, partial(bounded_text, field=name))
    for name in _VOCAB_FIELDS:
        if name in raw:
            row.take(name, partial(normalize_vocab, name))
    return row


def _optional(row: _Row, currency: str) -> None:
    raw, values = row.raw, row.values
    for name in ("msrp", "list_price"):
        if name in raw:
            row.take(name, partial(parse_price, currency=currency, field=name))
    unit = "mi"
    if "mileage_unit" in raw:
        try:
            unit = parse_distance_unit(raw["mileage_unit"])
        except FieldError as exc:
            row.fail(exc, "mileage_unit")
    if "mileage" in raw:
        row.take("mileage", partial(parse_mileage, default_unit=unit))
    elif "mileage_km" in raw:
        row.take("mileage_km", partial(parse_mileage, default_unit="km"), "mileage")
    elif values.get("condition", Condition.USED) is not Condition.NEW:
        reason = "mileage is required for a used vehicle"
        row.errors.append(_error(row.record, "missing_field", reason, "mileage", None))
    if "status" in raw:
        row.take("status", parse_status)
    if "sold_at" in raw and values.get("status") is VehicleStatus.SOLD:
        row.take("sold_at", partial(parse_date, field="sold_at"))
    _links(row)


def _links(row: _Row) -> None:
    if "photo_urls" in row.raw:
        row.take("photo_urls", parse_photos, "photos")
    if "vdp_url" in row.raw:
        row.take("vdp_url", parse_page_link)
        if row.values.get("vdp_url", "") is None:  # not a link: left out, so a stored page stays
            del row.values["vdp_url"]


def parse_record(record: RawRecord, *, currency: str, year_max: int) -> FeedRow | RejectedRow:
    """The typed values of one record, or why it is rejected (every bad field, the VIN first).

    Args:
        record: The raw record.
        currency: ISO 4217 code prices are in (the dealership's).
        year_max: Newest model year accepted.
    """
    raw_vin = text(record.values.get("vin"))
    vin: str | None = None
    vin_error: RowError | None = None
    if not raw_vin:
        vin_error = _error(record, "missing_field", "required field vin is empty", "vin", None)
    else:
        try:
            vin = normalize_vin(raw_vin)
        except VinError as exc:
            vin_error = _error(record, f"invalid_vin.{exc.reason}", f"invalid VIN: {exc}", "vin", raw_vin)
    row = _parse(record, vin or raw_vin, currency, year_max)
    errors = [vin_error, *row.errors] if vin_error else row.errors
    if errors:
        return RejectedRow.of(errors, vin=(vin or raw_vin) or None)
    return FeedRow(record.line, vin or raw_vin, row.values)
