"""Helpers of the hostile-input tests: bounded fuzz settings, minimal valid payloads, and what a clean refusal is."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from forecourt.surfaces.openapi import self_contained

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# HYPOTHESIS_PROFILE=long runs the fuzzers for much longer (see docs/operations.md); CI runs a bounded number.
_EXAMPLES = {"ci": 50, "dev": 100, "long": 5000}
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev")


def fuzz_settings(scale: float = 1.0) -> settings:
    """Hypothesis settings for one fuzzer: ``scale`` times the profile's example count, no deadline."""
    examples = max(5, int(_EXAMPLES.get(PROFILE, _EXAMPLES["dev"]) * scale))
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=IN_CI,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )


EMAILS = st.emails().map(lambda e: e.lower()).filter(lambda e: len(e) <= 120)
PHONES = st.from_regex(r"\+1[2-9][0-9]{9}", fullmatch=True)
PII = st.one_of(EMAILS, PHONES)

# JSON values of every kind, including the awkward ones: huge and out-of-range numbers, odd unicode.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=64),
    PII,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=16), inner, max_size=5)),
    max_leaves=25,
)

_TRACE_MARKERS = ("Traceback (most recent call last)", 'File "/', "sqlalchemy", "asyncpg", "aiosqlite")


def pii_in(value: Any) -> list[str]:
    """Every e-mail- or phone-like string value anywhere inside ``value`` (object keys are names, not values)."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if re.fullmatch(r"[^@\s]+@[^@\s]+", item) or re.fullmatch(r"\+1[2-9][0-9]{9}", item):
                found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def assert_clean_refusal(response: httpx.Response, *, echoed: Sequence[str] = (), allow_ok: bool = False) -> None:
    """A 4xx (or, with ``allow_ok``, a 2xx) JSON answer with an error code, no stack trace, no echoed PII."""
    status = response.status_code
    assert status < 500, (status, response.text[:500])
    if allow_ok and status < 300:
        return
    assert 400 <= status < 500, (status, response.text[:500])
    text = response.text
    for marker in _TRACE_MARKERS:
        assert marker not in text, (marker, text[:500])
    for value in echoed:
        if len(value) >= 6:
            assert value not in text, ("PII echoed", value, text[:500])
            assert json.dumps(value)[1:-1] not in text, ("PII echoed", value, text[:500])
    if response.headers.get("content-type", "").startswith("application/json"):
        assert error_code_of(response.json()), text[:500]


def error_code_of(body: Any) -> str | None:
    """The error code of any Forecourt error body (REST envelope, ``{error}``, JSON-RPC, AAP)."""
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("status"), dict) and isinstance(body["status"].get("error"), dict):
        return str(body["status"]["error"]["code"])
    error = body.get("error")
    if isinstance(error, dict):
        data = error.get("data")
        if isinstance(data, dict) and "code" in data:
            return str(data["code"])
        return str(error.get("code"))
    if body.get("type") == "aap.error":
        return str(body.get("code"))
    return None


# ---------------------------------------------------------------- minimal valid payloads from a JSON Schema

_FORMATS = {
    "email": "someone@example.com",
    "date-time": "2026-03-10T10:00:00+00:00",
    "date": "2026-03-10",
    "time": "10:00:00+00:00",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


# The smallest string of a pattern is found by generating and shrinking only (Hypothesis's explain phase traces every
# shrink step and cost minutes over the isolation matrix), once per pattern and length: it is the same every time.
_FIND_SETTINGS = settings(phases=[Phase.generate, Phase.shrink], database=None, deadline=None)
_SMALLEST: dict[tuple[str, int], str] = {}


def _smallest_match(pattern: str, min_len: int) -> str:
    key = (pattern, min_len)
    if key not in _SMALLEST:
        found = find(st.from_regex(pattern, fullmatch=True), lambda s: len(s) >= min_len, settings=_FIND_SETTINGS)
        _SMALLEST[key] = str(found)
    return _SMALLEST[key]


def _string(schema: Mapping[str, Any]) -> str:
    if "format" in schema and schema["format"] in _FORMATS:
        return _FORMATS[schema["format"]]
    min_len = int(schema.get("minLength", 1))
    if "pattern" in schema:
        return _smallest_match(str(schema["pattern"]), min_len)
    return "x" * max(min_len, 1)


def _number(schema: Mapping[str, Any]) -> int | float:
    for key in ("minimum", "exclusiveMinimum"):
        if key in schema:
            value = schema[key]
            return value + 1 if key == "exclusiveMinimum" else value
    if "maximum" in schema and schema["maximum"] < 0:
        return schema["maximum"]
    return 1


def minimal_instance(schema: Mapping[str, Any]) -> Any:
    """The smallest instance of ``schema`` this generator can build: required fields only, first choices."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return next((v for v in schema["enum"] if v is not None), schema["enum"][0])
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema and "type" not in schema and "properties" not in schema:
            return minimal_instance(schema[combinator][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema)
    if kind == "array":
        items = schema.get("items") or {"type": "string"}
        count = int(schema.get("minItems", 0))
        if schema.get("uniqueItems") and count > 1:
            return _unique_items(items, count)
        return [minimal_instance(items) for _ in range(count)]
    scalar = _SCALAR_BUILDERS.get(str(kind))
    return scalar(schema) if scalar is not None else {}


_SCALAR_BUILDERS: dict[str, Any] = {
    "string": _string,
    "integer": lambda schema: int(_number(schema)),
    "number": _number,
    "boolean": lambda _schema: False,
    "null": lambda _schema: None,
}


def _unique_items(items: Mapping[str, Any], count: int) -> list[Any]:
    if "enum" in items:
        return list(items["enum"][:count])
    return [f"x{i}" for i in range(count)]


def _object(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    required = list(schema.get("required") or [])
    for combinator in ("anyOf", "oneOf"):
        for branch in (schema.get(combinator) or [])[:1]:
            required.extend(r for r in branch.get("required", []) if r not in required)
    return {name: minimal_instance(properties.get(name, {"type": "string"})) for name in required}


def minimal_payload(input_schema: Mapping[str, Any], **fixed: Any) -> dict[str, Any]:
    """A payload that validates against ``input_schema``, with ``fixed`` fields set (asserts that it validates)."""
    payload = _object(self_contained(input_schema))
    payload.update(fixed)
    errors = [e.message for e in Draft202012Validator(input_schema).iter_errors(payload)]
    assert not errors, (payload, errors)
    return payload
