"""Natural-language inventory requests mapped onto inventory.search filters."""

from __future__ import annotations

import pytest

from forecourt.adapters.knowledge.adapter import rank_vehicles
from forecourt.adapters.knowledge.inventory_nl import LOW_MILES_MAX, Vocabulary, parse_inventory_request

STOCK = Vocabulary(
    makes=["Toyota", "Honda"],
    models=["Highlander", "Grand Highlander", "RAV4", "Camry", "Pilot", "Odyssey", "CR-V", "Sienna", "Tacoma"],
    trims=["XLE", "Limited", "EX-L", "TRD Off-Road"],
    colors=[
        "Supersonic Red",
        "Super White",
        "Radiant Red Metallic",
        "Midnight Black Metallic",
        "Magnetic Gray Metallic",
    ],
)


def test_three_row_suv_under_40k_with_low_miles() -> None:
    intent = parse_inventory_request("three-row SUV under 40k with low miles", STOCK)
    assert intent.filters["body"] == ["suv"]
    assert intent.filters["price_max"] == 4_000_000
    assert intent.filters["mileage_max"] == LOW_MILES_MAX
    assert set(intent.filters["model"]) == {"Highlander", "Grand Highlander", "Pilot"}
    assert intent.weights["mileage"] > intent.weights["price"]
    assert "mileage_max" in intent.soft
    assert intent.ignored == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "used Camry between $18,000 and $25,000",
            {"model": ["Camry"], "price_min": 1_800_000, "price_max": 2_500_000},
        ),
        ("red toyota under $30k", {"make": ["Toyota"], "price_max": 3_000_000}),
        ("2021 or newer hybrid", {"year_min": 2021, "fuel": ["hybrid", "plug_in_hybrid"]}),
        ("a 2019 Pilot", {"year_min": 2019, "year_max": 2019, "model": ["Pilot"]}),
        ("awd crossover less than 50,000 miles", {"driveline": ["awd"], "body": ["suv"], "mileage_max": 50_000}),
        ("certified pre-owned CR-V", {"condition": ["cpo"], "model": ["CR-V"]}),
        ("brand new minivan", {"condition": ["new"], "body": ["minivan"]}),
        ("electric car around 45k", {"fuel": ["electric"], "price_min": 4_050_000, "price_max": 4_950_000}),
        ("pickup over 35k", {"body": ["pickup"], "price_min": 3_500_000}),
        ("newer than 2020 stick shift", {"year_min": 2021, "transmission": ["manual"]}),
        ("seats 7 under 45 grand", {"price_max": 4_500_000}),
        ("Tacoma TRD Off-Road", {"model": ["Tacoma"], "trim": ["TRD Off-Road"]}),
    ],
)
def test_common_requests_map_onto_filters(text: str, expected: dict[str, object]) -> None:
    filters = parse_inventory_request(text, STOCK).filters
    for key, value in expected.items():
        assert filters[key] == value, (text, key, filters)


def test_colour_words_match_the_colours_in_stock() -> None:
    intent = parse_inventory_request("red suv", STOCK)
    assert intent.filters["exterior_color"] == ["Supersonic Red", "Radiant Red Metallic"]
    assert "exterior_color" in intent.soft


def test_grey_and_gray_are_the_same_colour() -> None:
    assert parse_inventory_request("grey sedan", STOCK).filters["exterior_color"] == ["Magnetic Gray Metallic"]


def test_three_row_without_a_body_includes_minivans() -> None:
    models = parse_inventory_request("something with a third row", STOCK).filters["model"]
    assert {"Odyssey", "Sienna", "Pilot", "Highlander"} <= set(models)


def test_sort_hints_become_an_explicit_sort() -> None:
    assert parse_inventory_request("cheapest RAV4", STOCK).sort == {"field": "price", "order": "asc"}
    assert parse_inventory_request("newest Camry", STOCK).sort == {"field": "year", "order": "desc"}
    assert parse_inventory_request("lowest mileage Pilot", STOCK).sort == {"field": "mileage", "order": "asc"}


def test_monthly_payments_are_not_mistaken_for_a_price_cap() -> None:
    intent = parse_inventory_request("suv for $400 a month", STOCK)
    assert "price_max" not in intent.filters
    assert any("400" in word for word in intent.ignored)


def test_miles_are_not_mistaken_for_a_price() -> None:
    filters = parse_inventory_request("under 60k miles", STOCK).filters
    assert filters == {"mileage_max": 60_000}


def test_every_filter_is_explained_by_the_phrase_that_set_it() -> None:
    intent = parse_inventory_request("used Honda under 25k", STOCK)
    phrases = {entry["filter"]: entry["phrase"] for entry in intent.interpretation if "filter" in entry}
    assert phrases["price_max"] == "under 25k"
    assert phrases["make"] == "Honda"
    assert phrases["condition"] == "used"


def test_unknown_words_are_reported_not_silently_dropped() -> None:
    assert "sunroof" in parse_inventory_request("suv with a sunroof", STOCK).ignored


def test_ranking_prefers_lower_mileage_when_asked_for_low_miles() -> None:
    intent = parse_inventory_request("suv with low miles", STOCK)
    cheap_high_miles = {"price": {"amount_minor": 2_000_000}, "mileage": {"value": 29_000}, "year": 2021}
    dear_low_miles = {"price": {"amount_minor": 2_600_000}, "mileage": {"value": 3_000}, "year": 2021}
    ranked = rank_vehicles([cheap_high_miles, dear_low_miles], intent)
    assert ranked[0][0] is dear_low_miles
    assert 0.0 <= ranked[1][1] <= ranked[0][1] <= 1.0
