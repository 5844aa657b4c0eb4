"""Input validation against an action's JSON Schema, with errors that never echo the caller's values."""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from forecourt import caching
from forecourt.domain.frozen import frozen
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
SCHEMAS_KEPT = 1024


@dataclass(frozen=True, slots=True)
class CompiledSchema:
    """What the gateway derives from one input schema: its value key, its validator and where it lifts strings."""

    key: bytes
    """The schema's canonical JSON: equal for equal schemas, whatever object holds them."""
    validator: Draft202012Validator
    lift: _Lift


def _compile(schema: Mapping[str, Any]) -> CompiledSchema:
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not plain JSON (a schema built in code with other values): its text, as near a value as any
        key = repr(sorted(schema.items(), key=lambda kv: str(kv[0]))).encode()
    validator = Draft202012Validator(dict(schema), format_checker=Draft202012Validator.FORMAT_CHECKER)
    return CompiledSchema(key, validator, _compile_lift(schema, 0))


compiled_schema: caching.HeldMemo[Mapping[str, Any], CompiledSchema] = caching.HeldMemo(
    "gateway.validation.schemas", SCHEMAS_KEPT, _compile
)
"""The compiled form of a schema object, held while it is kept: a schema rebuilt at a recycled address (an
upstream's tools reloaded) is compiled afresh, never validated by the rules of the one that lived there before."""


class SchemaValidator:
    """Compiled validators per schema, reused across calls; instances already found valid are not checked again.

    Validation is a pure function of the schema and the instance (formats included), and callers repeat the
    same few payloads (an agent paging through a search, the same question from many shoppers): the last
    ``VALID_MEMO`` valid instances per process are kept by the schema's value (its canonical JSON) and the
    instance's frozen form (``domain/frozen.py``; the pipeline passes the one it made for the call).
    """

    def __init__(self) -> None:
        self._valid: caching.Cache[tuple[bytes, Hashable], bool] = caching.lru(
            "gateway.validation.valid_payloads", VALID_MEMO
        )

    def _validator(self, schema: Mapping[str, Any]) -> Draft202012Validator:
        return compiled_schema(schema).validator

    def validate(
        self, schema: Mapping[str, Any], instance: Any, *, what: str = "payload", form: Hashable | None = None
    ) -> None:
        """Raise :class:`InvalidParams` listing every violation's path and rule (never the values).

        ``form``: ``frozen(instance)`` when the caller has it already (``None``: frozen here).
        """
        if form is None:
            form = frozen(instance)
        key = (compiled_schema(schema).key, form) if form is not None else None  # None: not plain JSON, always walked
        if key is not None and self._valid.get(key):
            return
        errors = sorted(self._validator(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
        if not errors:
            if key is not None:
                self._valid.put(key, True)
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
_MAX_DEPTH = 256  # deeper than any JSON a front door accepts (FORECOURT_MAX_JSON_DEPTH)


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
    take a lone string is worked out once per schema, with its validator (:data:`compiled_schema`).
    """
    lift = compiled_schema(schema).lift
    return instance if lift is _NOTHING else _lifted(lift, instance)
