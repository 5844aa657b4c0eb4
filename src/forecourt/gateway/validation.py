"""Input validation against an action's JSON Schema, with errors that never echo the caller's values."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from forecourt.errors import InvalidParams

_MAX_REPORTED = 5
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def _pointer(path: Any) -> str:
    parts = [str(p) for p in path]
    return "/" + "/".join(parts) if parts else "/"


def _describe(error: ValidationError) -> dict[str, Any]:
    """A value-free description of one schema violation (values may be PII, so they are never copied)."""
    kind = str(error.validator)
    detail: dict[str, Any] = {"path": _pointer(error.absolute_path), "rule": kind}
    if kind == "required" and isinstance(error.validator_value, list):
        inst = error.instance if isinstance(error.instance, dict) else {}
        missing = [k for k in error.validator_value if k not in inst]
        detail["missing"] = missing
    elif kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set((error.schema.get("properties") or {}).keys()) if isinstance(error.schema, dict) else set()
        extra = [str(k) for k in error.instance if k not in allowed]
        # A key can itself be personal data ({"jane@example.com": ...}): only identifier-like names are named.
        named = sorted(k for k in extra if _IDENTIFIER.fullmatch(k))
        detail["unexpected"] = named[:10]
        if len(named) < len(extra):
            detail["unexpected_unnamed"] = len(extra) - len(named)
    elif kind in ("type", "enum", "const", "format", "pattern"):
        expected = error.validator_value
        if kind == "enum" and isinstance(expected, list):
            detail["allowed"] = expected[:20]
        elif kind in ("type", "format", "const"):
            detail["expected"] = expected
    elif kind in (
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
    ):
        detail["limit"] = error.validator_value
    return detail


VALID_MEMO = 2048


class SchemaValidator:
    """Compiled validators per schema, reused across calls; instances already found valid are not checked again.

    Validation is a pure function of the schema and the instance (formats included), and callers repeat the
    same few payloads (an agent paging through a search, the same question from many shoppers): the last
    ``VALID_MEMO`` valid instances per process are kept by their canonical JSON, so a repeated payload costs one
    ``orjson.dumps`` instead of a walk of the schema.
    """

    def __init__(self) -> None:
        self._compiled: dict[int, Draft202012Validator] = {}
        self._valid: OrderedDict[tuple[int, bytes], None] = OrderedDict()

    def _validator(self, schema: Mapping[str, Any]) -> Draft202012Validator:
        key = id(schema)
        validator = self._compiled.get(key)
        if validator is None:
            validator = Draft202012Validator(dict(schema), format_checker=Draft202012Validator.FORMAT_CHECKER)
            self._compiled[key] = validator
        return validator

    def validate(self, schema: Mapping[str, Any], instance: Any, *, what: str = "payload") -> None:
        """Raise :class:`InvalidParams` listing every violation's path and rule (never the values)."""
        validator = self._validator(schema)
        try:
            key: tuple[int, bytes] | None = (id(schema), orjson.dumps(instance, option=orjson.OPT_SORT_KEYS))
        except TypeError:  # not plain JSON (a script's own values): checked every time
            key = None
        if key is not None and key in self._valid:
            self._valid.move_to_end(key)
            return
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        if not errors:
            if key is not None:
                self._valid[key] = None
                if len(self._valid) > VALID_MEMO:
                    self._valid.popitem(last=False)
            return
        problems = [_describe(e) for e in errors[:_MAX_REPORTED]]
        first = problems[0]
        raise InvalidParams(
            f"The {what} is invalid at {first['path']} ({first['rule']}).",
            details={"errors": problems, "error_count": len(errors)},
        )


def _is_string_list(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    if schema.get("type") == "array":
        items = schema.get("items")
        return isinstance(items, Mapping) and items.get("type") == "string"
    return any(_is_string_list(s) for s in (schema.get("anyOf") or schema.get("oneOf") or ()))


@dataclass(frozen=True)
class _Lift:
    """Where a schema puts a lone string in a list: here (a list of strings), under some properties, in items."""

    string_list: bool = False
    properties: tuple[tuple[str, _Lift], ...] = ()
    items: _Lift | None = None


_NOTHING = _Lift()
_LIFTS: dict[int, tuple[Mapping[str, Any], _Lift]] = {}  # by schema identity (an action's schema lives as long)
_LIFTS_KEPT = 4096
_MAX_DEPTH = 256  # deeper than any JSON a front door accepts (FORECOURT_MAX_JSON_DEPTH)


def _lift_of(schema: Mapping[str, Any]) -> _Lift:
    known = _LIFTS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    lift = _compile_lift(schema, 0)
    if len(_LIFTS) >= _LIFTS_KEPT:
        _LIFTS.clear()
    _LIFTS[id(schema)] = (schema, lift)
    return lift


def _compile_lift(schema: Any, depth: int) -> _Lift:
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return _NOTHING
    properties: tuple[tuple[str, _Lift], ...] = ()
    declared = schema.get("properties")
    if schema.get("type") == "object" and isinstance(declared, Mapping):
        compiled = ((key, _compile_lift(sub, depth + 1)) for key, sub in declared.items() if isinstance(sub, Mapping))
        properties = tuple((key, lift) for key, lift in compiled if lift is not _NOTHING)
    items: _Lift | None = None
    if schema.get("type") == "array" and isinstance(schema.get("items"), Mapping):
        lift = _compile_lift(schema["items"], depth + 1)
        items = None if lift is _NOTHING else lift
    string_list = _is_string_list(schema)
    if not string_list and not properties and items is None:
        return _NOTHING
    return _Lift(string_list, properties, items)


def _lifted(lift: _Lift, instance: Any) -> Any:
    if lift.string_list and isinstance(instance, str):
        return [instance]
    if lift.properties and isinstance(instance, Mapping):
        changed: dict[str, Any] = {}
        for key, sub in lift.properties:
            if key in instance:
                value = instance[key]
                lifted = _lifted(sub, value)
                if lifted is not value:
                    changed[key] = lifted
        return {**instance, **changed} if changed else instance
    if lift.items is not None and isinstance(instance, list):
        converted = [_lifted(lift.items, value) for value in instance]
        return instance if all(a is b for a, b in zip(converted, instance, strict=True)) else converted
    return instance


def accept_single_strings(schema: Mapping[str, Any], instance: Any) -> Any:
    """``instance`` with a lone string put in a list wherever ``schema`` expects a list of strings.

    Callers write ``"make": "Toyota"`` as often as ``"make": ["Toyota"]``; every action, on every front door,
    accepts both because the gateway applies this once, before validation. Nested objects and lists of
    objects are followed; anything else is returned as it is (validation then judges it). Where a schema can
    take a lone string is worked out once per schema (it is an action's, and lives as long).
    """
    lift = _lift_of(schema)
    return instance if lift is _NOTHING else _lifted(lift, instance)
