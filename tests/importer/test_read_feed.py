"""Reading and validating feeds without a store: line numbers, reasons, truncation, encodings, shapes."""

from __future__ import annotations

import json

import pytest

from forecourt.errors import ImportRejected
from forecourt.inventory_import import read_feed, validate_feed

from .conftest import FEEDS


def _validate(name: str, **kwargs: str) -> tuple[list[int], dict[int, str]]:
    raw, _ = read_feed((FEEDS / name).read_bytes(), filename=name, **kwargs)
    rows, rejected = validate_feed(raw, currency="USD", year_max=2028)
    return [r.line for r in rows], {r.line: r.code for r in rejected}


def test_every_bad_row_is_reported_with_its_csv_line_and_reason_code() -> None:
    accepted, rejected = _validate("bad_rows.csv")
    assert accepted == [2, 11]
    assert rejected == {
        3: "invalid_vin.check_digit",
        4: "invalid_vin.length",
        5: "missing_field",
        6: "bad_price",
        7: "bad_number",
        8: "unknown_condition",
        9: "duplicate_vin",
        10: "unknown_status",
    }


def test_the_second_occurrence_of_a_vin_is_the_one_rejected() -> None:
    raw, _ = read_feed((FEEDS / "bad_rows.csv").read_bytes(), filename="bad_rows.csv")
    rows, rejected = validate_feed(raw, currency="USD", year_max=2028)
    duplicate = next(r for r in rejected if r.code == "duplicate_vin")
    assert duplicate.vin == rows[0].vin
    assert "line 2" in duplicate.reason


def test_a_bad_vin_rejection_names_the_field_and_keeps_the_raw_vin() -> None:
    raw, _ = read_feed((FEEDS / "bad_rows.csv").read_bytes(), filename="bad_rows.csv")
    _, rejected = validate_feed(raw, currency="USD", year_max=2028)
    bad = next(r for r in rejected if r.line == 3)
    assert (bad.field, bad.vin) == ("vin", "4T1DAACK1SU100101")


def test_feed_aliases_are_mapped_and_unknown_columns_reported() -> None:
    raw, report = read_feed((FEEDS / "aliases.csv").read_bytes(), filename="aliases.csv")
    rows, rejected = validate_feed(raw, currency="USD", year_max=2028)
    assert rejected == []
    assert report.ignored_columns == ["DealerNotes"]
    first = rows[0].values
    assert first["stock"] == "C2001"
    assert first["price"].amount_minor == 2199500
    assert first["mileage"].value == 24310
    assert (first["body"], first["transmission"], first["fuel"], first["driveline"]) == ("sedan", "cvt", "gas", "fwd")
    assert len(first["photos"]) == 2
    assert rows[1].values["status"].value == "pending"
    assert rows[2].values["condition"].value == "cpo"


def test_a_csv_cut_mid_row_rejects_only_the_cut_row() -> None:
    accepted, rejected = _validate("truncated.csv")
    assert accepted == [2, 3]
    assert rejected == {4: "truncated_row"}


def test_a_csv_cut_inside_a_quoted_field_rejects_the_cut_row() -> None:
    accepted, rejected = _validate("truncated_quote.csv")
    assert accepted == [2]
    assert rejected == {3: "truncated_row"}


def test_a_quoted_field_spanning_lines_keeps_physical_line_numbers() -> None:
    text = (
        "vin,year,make,model,condition,price,mileage,trim\n"
        '4T1DAACKXSU100101,2025,Toyota,Camry,new,28995,5,"two\nline trim"\n'
        "2T3P1RFV6RC100102,2024,Toyota,RAV4,used,oops,100,LE\n"
    )
    raw, _ = read_feed(text.encode(), fmt="csv")
    rows, rejected = validate_feed(raw, currency="USD", year_max=2028)
    assert [r.line for r in rows] == [2]
    assert [(r.line, r.code) for r in rejected] == [(4, "bad_price")]


def test_json_rows_are_numbered_by_array_position() -> None:
    accepted, rejected = _validate("feed.json")
    assert accepted == [1, 2, 5]
    assert rejected == {3: "invalid_vin.check_digit", 4: "not_an_object"}


def test_json_values_keep_exact_money_and_units() -> None:
    raw, report = read_feed((FEEDS / "feed.json").read_bytes(), filename="feed.json")
    rows, _ = validate_feed(raw, currency="USD", year_max=2028)
    assert report.format == "json"
    assert rows[1].values["price"].amount_minor == 2999599
    assert rows[0].values["msrp"].amount_minor == 3275000
    assert rows[2].values["mileage"].unit == "km"


def test_a_json_object_with_a_vehicles_array_is_a_feed() -> None:
    accepted, rejected = _validate("wrapped.json")
    assert (accepted, rejected) == ([1], {})


def test_a_truncated_json_document_is_rejected_whole_with_a_reason() -> None:
    with pytest.raises(ImportRejected) as info:
        read_feed((FEEDS / "truncated.json").read_bytes(), filename="truncated.json")
    assert info.value.code == "inventory.import_rejected"
    assert info.value.details["reason"] == "truncated_json"


def test_malformed_json_is_rejected_whole() -> None:
    with pytest.raises(ImportRejected) as info:
        read_feed(b'[{"vin": 1,, "make": 2}]', fmt="json")
    assert info.value.details["reason"] == "malformed_json"


def test_json_of_another_shape_is_rejected_whole() -> None:
    with pytest.raises(ImportRejected) as info:
        read_feed(json.dumps({"cars": []}).encode(), fmt="json")
    assert info.value.details["reason"] == "json_shape"


def test_a_csv_without_a_required_column_is_rejected_whole() -> None:
    with pytest.raises(ImportRejected) as info:
        read_feed(b"vin,make,model\n4T1DAACKXSU100101,Toyota,Camry\n", fmt="csv")
    assert info.value.details["reason"] == "missing_columns"
    assert info.value.details["missing"] == ["year", "condition", "price"]


def test_a_cp1252_feed_is_read_with_a_fallback_warning() -> None:
    raw, report = read_feed((FEEDS / "cp1252.csv").read_bytes(), filename="cp1252.csv")
    rows, rejected = validate_feed(raw, currency="USD", year_max=2028)
    assert rejected == []
    assert (report.encoding, report.encoding_fallback) == ("cp1252", True)
    assert report.warnings
    assert rows[0].values["exterior_color"] == "Blanc Glacé"
    assert rows[1].values["interior_color"] == "Noir — Black"


def test_tab_separated_feeds_are_detected() -> None:
    text = "VIN\tYear\tMake\tModel\tType\tPrice\tMiles\n4T1DAACKXSU100101\t2025\tToyota\tCamry\tN\t$28,995\t5\n"
    raw, _ = read_feed(text.encode(), filename="feed.txt")
    rows, rejected = validate_feed(raw, currency="USD", year_max=2028)
    assert (len(rows), rejected) == (1, [])


def test_the_format_is_sniffed_from_content_when_there_is_no_file_name() -> None:
    _, report = read_feed((FEEDS / "feed.json").read_bytes())
    assert report.format == "json"


def test_an_unknown_format_is_rejected() -> None:
    with pytest.raises(ImportRejected) as info:
        read_feed(b"", fmt="xml")
    assert info.value.details["reason"] == "unknown_format"


def test_a_used_vehicle_without_mileage_is_rejected() -> None:
    text = "vin,year,make,model,condition,price\n2T3P1RFV6RC100102,2024,Toyota,RAV4,used,25995\n"
    raw, _ = read_feed(text.encode(), fmt="csv")
    _, rejected = validate_feed(raw, currency="USD", year_max=2028)
    assert [(r.code, r.field) for r in rejected] == [("missing_field", "mileage")]


def test_a_zero_price_is_rejected() -> None:
    text = "vin,year,make,model,condition,price,mileage\n2T3P1RFV6RC100102,2024,Toyota,RAV4,used,$0,100\n"
    raw, _ = read_feed(text.encode(), fmt="csv")
    _, rejected = validate_feed(raw, currency="USD", year_max=2028)
    assert [r.code for r in rejected] == ["bad_price"]
