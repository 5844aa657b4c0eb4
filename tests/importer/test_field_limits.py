"""Feed fields are bounded by the vehicle's own limits, links must be publishable, and a cell over the CSV reader's
limit is reported as too long: a clear row error each, the rest of the feed imported, nothing of the bad row stored."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from forecourt.domain.money import Money
from forecourt.domain.vehicle import MILEAGE_MAX, PHOTOS_MAX, PRICE_MAX_MINOR, TEXT_LIMITS, Condition, Vehicle
from forecourt.inventory_import import import_feed
from forecourt.inventory_import.errors import FieldError
from forecourt.inventory_import.values import normalize_vocab
from forecourt.store import SqlStore

from .conftest import DEALER

NOW = datetime(2026, 11, 20, 15, 30, tzinfo=UTC)
HEADER = "VIN,Year,Make,Model,Trim,Condition,Price,Mileage,Photos,VDP URL,Description\n"
GOOD = "4T1DAACKXSU100101,2025,Toyota,Camry,XLE,new,27995,5,https://cdn.example.com/1.jpg,https://d.example.com/1,Nice"
VIN2, VIN3 = "2T3P1RFV6RC100102", "5TDKDRAH1NS100103"


def _row(vin: str = VIN2, **cells: str) -> str:
    values = {"trim": "LE", "price": "25995", "mileage": "30100", "photos": "", "vdp": "", "description": ""}
    values.update(cells)
    order = ("trim", "price", "mileage", "photos", "vdp", "description")
    trim, price, mileage, photos, vdp, description = (values[k] for k in order)
    return f"{vin},2024,Toyota,RAV4,{trim},used,{price},{mileage},{photos},{vdp},{description}"


async def _import(store: SqlStore, *rows: str, name: str = "f.csv") -> Any:
    return await import_feed(store, (HEADER + "\n".join(rows) + "\n").encode(), DEALER, now=NOW, filename=name)


async def _stored_vins(store: SqlStore) -> set[str]:
    async with store.read() as uow:
        found = await uow.inventory.get_many_by_vin(DEALER, ["4T1DAACKXSU100101", VIN2, VIN3])
    return set(found)


async def test_a_trim_longer_than_the_vehicle_holds_rejects_its_row_and_is_never_stored(store: SqlStore) -> None:
    report = await _import(store, GOOD, _row(trim="x" * 120_000))
    assert (report.created, report.rejected) == (1, 1)
    [error] = report.rejected_rows[0].errors
    assert (error.line, error.code, error.field, error.column) == (3, "too_long", "trim", "Trim")
    assert error.value_class == "words (120000 characters)"
    assert "x" * 100 not in report.model_dump_json()
    assert await _stored_vins(store) == {"4T1DAACKXSU100101"}


@pytest.mark.parametrize("field", sorted(set(TEXT_LIMITS) - {"make", "model"}))
async def test_every_text_field_one_character_over_its_limit_is_too_long_and_at_the_limit_is_fine(
    store: SqlStore, field: str
) -> None:
    limit = TEXT_LIMITS[field]
    header = f"VIN,Year,Make,Model,Condition,Price,Mileage,{field}\n"
    rows = [
        f"{VIN2},2024,Toyota,RAV4,used,25995,100,{'a' * limit}",
        f"{VIN3},2022,Toyota,RAV4,used,25995,100,{'a' * (limit + 1)}",
    ]
    report = await import_feed(store, (header + "\n".join(rows) + "\n").encode(), DEALER, now=NOW, filename="f.csv")
    assert (report.created, report.rejected) == (1, 1)
    assert [(e.code, e.field) for e in report.rejected_rows[0].errors] == [("too_long", field)]


async def test_a_cell_over_the_csv_readers_limit_is_reported_as_too_long_not_as_a_stray_quote(
    store: SqlStore,
) -> None:
    over = "y" * (csv.field_size_limit() + 10)
    report = await _import(store, GOOD, _row(description=over), _row(VIN3))
    assert (report.created, report.rejected) == (2, 1)
    rejected = report.rejected_rows[0]
    assert (rejected.line, rejected.code) == (3, "field_too_long")
    assert "stray quote" not in rejected.reason
    assert await _stored_vins(store) == {"4T1DAACKXSU100101", VIN3}


async def test_a_json_feed_is_held_to_the_same_limits(store: SqlStore) -> None:
    vehicle = {"vin": VIN2, "year": 2024, "make": "Toyota", "model": "RAV4", "condition": "used", "price": 25995,
               "mileage": 100}  # fmt: skip
    feed = [
        {**vehicle, "description": "d" * (TEXT_LIMITS["description"] + 1)},
        {
            **vehicle,
            "vin": VIN3,
            "make": "M" * (TEXT_LIMITS["make"] + 1),
            "photos": ["https://c.example.com/a.jpg"] * 101,
        },
    ]
    report = await import_feed(store, json.dumps(feed).encode(), DEALER, now=NOW, filename="f.json")
    assert report.rejected == 2
    codes = [[(e.code, e.field) for e in row.errors] for row in report.rejected_rows]
    assert codes == [[("too_long", "description")], [("too_long", "make"), ("too_many", "photo_urls")]]
    assert await _stored_vins(store) == set()


@pytest.mark.parametrize(
    ("cells", "code", "field"),
    [
        ({"photos": "https://user:secret@cdn.example.com/a.jpg"}, "bad_url", "photo_urls"),
        ({"photos": "https://cdn.example.com/" + "p" * 2_000 + ".jpg"}, "too_long", "photo_urls"),
        (
            {"photos": "|".join(f"https://cdn.example.com/{i}.jpg" for i in range(PHOTOS_MAX + 1))},
            "too_many",
            "photo_urls",
        ),
        ({"vdp": "https://dealer.example.com/a b"}, "bad_url", "vdp_url"),
        ({"vdp": "http://"}, "bad_url", "vdp_url"),
        ({"price": "9" * 40}, "bad_price", "price"),
        ({"mileage": "9" * 40}, "bad_number", "mileage"),
    ],
)
async def test_a_link_that_cannot_be_published_or_a_number_beyond_any_vehicle_is_a_row_error(
    store: SqlStore, cells: dict[str, str], code: str, field: str
) -> None:
    """Before, a 40-digit price reached the database and failed the whole import with an OverflowError."""
    report = await _import(store, GOOD, _row(**cells))
    assert (report.created, report.rejected) == (1, 1)
    assert [(e.code, e.field) for e in report.rejected_rows[0].errors] == [(code, field)]


async def test_links_in_other_schemes_are_left_out_as_before_and_never_stored(store: SqlStore) -> None:
    row = _row(photos="javascript:alert(1)|https://cdn.example.com/ok.jpg|data:image/png;base64,AAAA",
               vdp="javascript:alert(document.cookie)")  # fmt: skip
    report = await _import(store, row)
    assert (report.created, report.rejected) == (1, 0)
    async with store.read() as uow:
        vehicle = await uow.inventory.get_by_vin(DEALER, VIN2)
    assert vehicle is not None
    assert (vehicle.photos, vehicle.vdp_url) == (("https://cdn.example.com/ok.jpg",), None)


def _vehicle(**overrides: Any) -> dict[str, Any]:
    return {"id": "v", "dealership_id": DEALER, "vin": VIN2, "stock": "S1", "year": 2024, "make": "Toyota",
            "model": "RAV4", "condition": Condition.USED, "price": Money.of(2599500), "last_verified_at": NOW,
            **overrides}  # fmt: skip


@pytest.mark.parametrize(
    "overrides",
    [
        {"trim": "t" * (TEXT_LIMITS["trim"] + 1)},
        {"stock": "s" * (TEXT_LIMITS["stock"] + 1)},
        {"photos": ("javascript:alert(1)",)},
        {"photos": ("https://c.example.com/a.jpg",) * (PHOTOS_MAX + 1)},
        {"vdp_url": "javascript:alert(1)"},
        {"vdp_url": "https://dealer.example.com/\r\nSet-Cookie: a=b"},
        {"price": Money.of(PRICE_MAX_MINOR + 1)},
        {"msrp": Money.of(PRICE_MAX_MINOR + 1)},
        {"mileage": {"value": MILEAGE_MAX + 1, "unit": "mi"}},
    ],
)
def test_the_vehicle_type_refuses_what_the_feed_parser_refuses(overrides: dict[str, Any]) -> None:
    """An update of a stored vehicle is validated by the model: the same limits hold there."""
    Vehicle.model_validate(_vehicle())
    with pytest.raises(ValidationError):
        Vehicle.model_validate(_vehicle(**overrides))


def test_a_long_vocabulary_cell_is_too_long_and_never_memoised() -> None:
    with pytest.raises(FieldError) as caught:
        normalize_vocab("transmission", "x" * 5_000)
    assert (caught.value.code, caught.value.field) == ("too_long", "transmission")
    assert normalize_vocab("transmission", "8-Speed Automatic " + "x" * 5_000) == "automatic"
