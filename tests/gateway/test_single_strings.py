"""A lone string where a schema expects a list of strings is taken as that list, wherever it is nested."""

from __future__ import annotations

from typing import Any

from forecourt.gateway.validation import accept_single_strings

STRINGS = {"type": "array", "items": {"type": "string"}}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "make": STRINGS,
        "trim": {"anyOf": [{"type": "null"}, STRINGS]},
        "limit": {"type": "integer"},
        "filters": {"type": "object", "properties": {"body_style": STRINGS, "note": {"type": "string"}}},
        "lines": {"type": "array", "items": {"type": "object", "properties": {"codes": STRINGS}}},
        "free": {"type": "object"},
    },
}


def test_a_lone_string_becomes_a_list_at_the_top_nested_in_objects_and_in_lists_of_objects() -> None:
    given = {
        "make": "Toyota",
        "trim": "XLE",
        "limit": 5,
        "filters": {"body_style": "SUV", "note": "blue please"},
        "lines": [{"codes": "A1"}, {"codes": ["B2"]}],
        "free": {"make": "Honda"},
    }
    assert accept_single_strings(SCHEMA, given) == {
        "make": ["Toyota"],
        "trim": ["XLE"],
        "limit": 5,
        "filters": {"body_style": ["SUV"], "note": "blue please"},
        "lines": [{"codes": ["A1"]}, {"codes": ["B2"]}],
        "free": {"make": "Honda"},
    }
    assert given["make"] == "Toyota"  # the caller's payload is left as it was


def test_a_payload_with_nothing_to_change_is_returned_as_the_same_object() -> None:
    given = {"make": ["Toyota"], "limit": 5, "lines": [{"codes": ["A1"]}], "unknown": "x"}
    assert accept_single_strings(SCHEMA, given) is given
    assert accept_single_strings({"type": "object", "properties": {"limit": {"type": "integer"}}}, given) is given


def test_values_of_another_shape_are_left_for_validation_to_judge() -> None:
    given = {"make": 7, "filters": "SUV", "lines": "A1"}
    assert accept_single_strings(SCHEMA, given) is given
    assert accept_single_strings(STRINGS, "Toyota") == ["Toyota"]
    assert accept_single_strings(SCHEMA, "Toyota") == "Toyota"


def test_an_equal_schema_built_anew_is_read_anew() -> None:
    first: dict[str, Any] = {"type": "object", "properties": {"make": STRINGS}}
    assert accept_single_strings(first, {"make": "Toyota"}) == {"make": ["Toyota"]}
    second: dict[str, Any] = {"type": "object", "properties": {"make": {"type": "string"}}}
    assert accept_single_strings(second, {"make": "Toyota"}) == {"make": "Toyota"}
