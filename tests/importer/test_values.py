"""Cell parsing: prices to exact minor units, numbers, vocabularies, photo lists, column aliases, encodings."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forecourt.domain.vehicle import Condition, VehicleStatus
from forecourt.inventory_import.columns import CANONICAL, EXTRA, canonical_column
from forecourt.inventory_import.decoding import decode_feed
from forecourt.inventory_import.errors import FieldError
from forecourt.inventory_import.values import (
    normalize_vocab,
    parse_condition,
    parse_mileage,
    parse_price,
    parse_status,
    parse_year,
    split_photos,
)

cents = st.integers(min_value=0, max_value=10**11)


def _dollars(amount_minor: int, *, commas: bool, sign: bool, decimals: bool) -> str:
    whole, frac = divmod(amount_minor, 100)
    text = f"{whole:,}" if commas else str(whole)
    if decimals or frac:
        text += f".{frac:02d}"
    return ("$" if sign else "") + text


@given(cents, st.booleans(), st.booleans(), st.booleans())
def test_a_dollar_price_in_any_common_spelling_parses_to_the_exact_cents(
    amount_minor: int, commas: bool, sign: bool, decimals: bool
) -> None:
    text = _dollars(amount_minor, commas=commas, sign=sign, decimals=decimals)
    assert parse_price(text, "USD").amount_minor == amount_minor


@given(cents)
def test_a_price_round_trips_through_major_units(amount_minor: int) -> None:
    major = Decimal(amount_minor).scaleb(-2)
    money = parse_price(str(major), "USD")
    assert money.amount_minor == amount_minor
    assert parse_price(str(money.to_major()), "USD") == money


@given(st.integers(min_value=0, max_value=10**7), st.integers(min_value=0, max_value=99))
def test_a_json_float_price_never_drifts_by_a_cent(dollars: int, frac: int) -> None:
    value = float(f"{dollars}.{frac:02d}")
    assert parse_price(value, "USD").amount_minor == dollars * 100 + frac


def test_price_text_that_is_not_an_amount_is_rejected_as_bad_price() -> None:
    for bad in ("twenty grand", "-100", "$1,2345", "1.234", "12.5.0", "", "$", True):
        with pytest.raises(FieldError) as info:
            parse_price(bad, "USD")
        assert info.value.code == "bad_price", bad


def test_a_price_object_with_amount_and_currency_is_accepted() -> None:
    money = parse_price({"amount": 20995, "currency": "USD"}, "USD")
    assert money.amount_minor == 2099500
    assert parse_price("USD 20995", "USD") == parse_price("20995 USD", "USD") == money


def test_yen_prices_have_no_minor_digits() -> None:
    assert parse_price("¥2,500,000", "JPY").amount_minor == 2500000
    with pytest.raises(FieldError):
        parse_price("2500.50", "JPY")


def test_conditions_accept_feed_abbreviations_and_reject_others() -> None:
    assert parse_condition("N") is Condition.NEW
    assert parse_condition(" used ") is Condition.USED
    assert parse_condition("Pre-Owned") is Condition.USED
    assert parse_condition("CPO") is Condition.CPO
    assert parse_condition("Certified Pre-Owned") is Condition.CPO
    with pytest.raises(FieldError) as info:
        parse_condition("salvage")
    assert info.value.code == "unknown_condition"


def test_statuses_accept_feed_words_and_reject_others() -> None:
    assert parse_status("In Stock") is VehicleStatus.AVAILABLE
    assert parse_status("in_transit") is VehicleStatus.IN_TRANSIT
    assert parse_status("Sale Pending") is VehicleStatus.PENDING
    assert parse_status("SOLD") is VehicleStatus.SOLD
    with pytest.raises(FieldError) as info:
        parse_status("lost at sea")
    assert info.value.code == "unknown_status"


def test_mileage_reads_commas_units_and_objects() -> None:
    assert parse_mileage("24,310 mi").value == 24310
    assert parse_mileage(52000).unit == "mi"
    km = parse_mileage("30000 km")
    assert (km.value, km.unit) == (30000, "km")
    assert parse_mileage({"value": 12, "unit": "km"}).unit == "km"
    with pytest.raises(FieldError) as info:
        parse_mileage("-5")
    assert info.value.code == "bad_number"


def test_year_must_be_a_whole_number_in_range() -> None:
    assert parse_year("2024", 2028) == 2024
    assert parse_year(2024.0, 2028) == 2024
    for bad in ("20X3", "2024.5", "1899", "2031"):
        with pytest.raises(FieldError) as info:
            parse_year(bad, 2028)
        assert info.value.code == "bad_number"


def test_free_text_vocabularies_map_onto_facet_values() -> None:
    assert normalize_vocab("transmission", "8-Speed Automatic") == "automatic"
    assert normalize_vocab("transmission", "6-Speed Manual") == "manual"
    assert normalize_vocab("transmission", "e-CVT") == "cvt"
    assert normalize_vocab("fuel", "Regular Unleaded") == "gas"
    assert normalize_vocab("fuel", "Plug-In Hybrid") == "plug_in_hybrid"
    assert normalize_vocab("fuel", "EV") == "electric"
    assert normalize_vocab("driveline", "All Wheel Drive") == "awd"
    assert normalize_vocab("driveline", "4X4") == "4wd"
    assert normalize_vocab("body", "Crew Cab Pickup") == "pickup"
    assert normalize_vocab("body", "Sport Utility") == "suv"
    assert normalize_vocab("body", "Roadster") == "roadster"


def test_photo_lists_split_on_pipes_commas_or_spaces_and_keep_only_web_urls() -> None:
    a, b = "https://cdn.forecourt.example/a.jpg", "https://cdn.forecourt.example/b.jpg"
    assert split_photos(f"{a}|{b}") == (a, b)
    assert split_photos(f"{a}, {b}") == (a, b)
    assert split_photos(f"{a} {b}") == (a, b)
    assert split_photos([a, "ftp://x/y.jpg", b]) == (a, b)
    comma_url = "https://img.example/w_400,h_300/c.jpg"
    assert split_photos(f"{comma_url},{a}") == (comma_url, a)


def test_every_canonical_column_and_the_common_feed_aliases_are_recognised() -> None:
    for name in CANONICAL + EXTRA:
        assert canonical_column(name) == name
    aliases = {
        "VIN": "vin", "StockNumber": "stock", "Stock #": "stock", "ModelYear": "year", "Series": "trim",
        "Type": "condition", "NewUsed": "condition", "InternetPrice": "price", "SellingPrice": "price",
        "Miles": "mileage", "Odometer": "mileage", "BodyStyle": "body", "ExtColor": "exterior_color",
        "IntColor": "interior_color", "FuelType": "fuel", "Drivetrain": "driveline", "PhotoURLs": "photo_urls",
        "ImageURLs": "photo_urls", "Photos": "photo_urls", "Status": "status",
    }  # fmt: skip
    for header, field in aliases.items():
        assert canonical_column(header) == field, header
    assert canonical_column("DealerNotes") is None


def test_utf8_with_a_bom_decodes_without_a_fallback() -> None:
    decoded = decode_feed("\ufeffvin,make\n1,Citroën\n".encode())
    assert (decoded.text[:3], decoded.encoding, decoded.fallback) == ("vin", "utf-8", False)


def test_cp1252_bytes_fall_back_to_cp1252_and_say_so() -> None:
    decoded = decode_feed("Blanc Glacé — Crème".encode("cp1252"))
    assert decoded.text == "Blanc Glacé — Crème"
    assert (decoded.encoding, decoded.fallback) == ("cp1252", True)


def test_bytes_undefined_in_cp1252_fall_back_to_latin1() -> None:
    decoded = decode_feed(b"caf\xe9 \x81")
    assert (decoded.encoding, decoded.fallback) == ("latin-1", True)
