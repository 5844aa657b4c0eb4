"""Building blocks shared by the dealer actions: schema fragments, the action factory, small helpers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from forecourt.actions.base import Action, AdapterResult, ExecutionContext
from forecourt.errors import InvalidParams

ADAPTER_ID = "dealer-data"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

JsonSchema = dict[str, Any]

ID: JsonSchema = {"type": "string", "minLength": 1, "maxLength": 128}
TIMESTAMP: JsonSchema = {"type": "string", "format": "date-time", "description": "RFC 3339 with an explicit offset."}
NULLABLE_TIMESTAMP: JsonSchema = {
    "type": ["string", "null"],
    "format": "date-time",
    "description": "RFC 3339 with an explicit offset, or null.",
}
NULLABLE_STRING: JsonSchema = {"type": ["string", "null"]}
STRING_LIST: JsonSchema = {"type": "array", "items": {"type": "string"}}
CURRENCY: JsonSchema = {"type": "string", "pattern": "^[A-Z]{3}$", "description": "ISO 4217 code."}
MONEY: JsonSchema = {
    "type": "object",
    "description": "Money: an integer amount in minor units (cents for USD) and an ISO 4217 currency.",
    "properties": {"amount_minor": {"type": "integer"}, "currency": CURRENCY},
    "required": ["amount_minor", "currency"],
    "additionalProperties": False,
}
NULLABLE_MONEY: JsonSchema = {"anyOf": [MONEY, {"type": "null"}]}
DISTANCE_UNIT: JsonSchema = {"type": "string", "enum": ["mi", "km"]}
MILEAGE: JsonSchema = {
    "type": "object",
    "description": "A distance with its unit (mi or km).",
    "properties": {"value": {"type": "integer", "minimum": 0}, "unit": DISTANCE_UNIT},
    "required": ["value", "unit"],
    "additionalProperties": False,
}
MILEAGE_INPUT: JsonSchema = {
    "type": "object",
    "description": "Odometer reading: a whole number and its unit; unit defaults to mi.",
    "properties": {"value": {"type": "integer", "minimum": 0, "maximum": 2_000_000}, "unit": DISTANCE_UNIT},
    "required": ["value"],
    "additionalProperties": False,
}
DEALERSHIP_ID: JsonSchema = {
    "type": "string",
    "minLength": 1,
    "maxLength": 128,
    "description": "The dealership (rooftop) to act on; optional when the credential is bound to exactly one.",
}
CURSOR: JsonSchema = {
    "type": "string",
    "minLength": 1,
    "maxLength": 2048,
    "description": "Opaque cursor from a previous page's next_cursor; omit for the first page.",
}
LIMIT: JsonSchema = {"type": "integer", "minimum": 1, "maximum": 100, "description": "Page size (default 20)."}
TOTAL: JsonSchema = {"type": "integer", "minimum": 0, "description": "Size of the whole matching set."}


def input_schema(
    properties: Mapping[str, JsonSchema],
    required: Sequence[str] = (),
    *,
    paged: bool = False,
    **extra: Any,
) -> JsonSchema:
    """A closed input object schema that also takes ``dealership_id`` (and ``cursor``/``limit`` when paged)."""
    props: dict[str, Any] = {"dealership_id": DEALERSHIP_ID, **properties}
    if paged:
        props["cursor"] = CURSOR
        props["limit"] = LIMIT
    schema: JsonSchema = {"$schema": DRAFT_2020_12, "type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    schema.update(extra)
    return schema


def obj(properties: Mapping[str, JsonSchema], required: Sequence[str] | None = None, **extra: Any) -> JsonSchema:
    """A closed object schema; every property is required unless ``required`` says otherwise."""
    schema: JsonSchema = {"type": "object", "properties": dict(properties)}
    schema["required"] = list(properties) if required is None else list(required)
    schema["additionalProperties"] = False
    schema.update(extra)
    return schema


def output_schema(item: JsonSchema) -> JsonSchema:
    """``item`` as a top-level output schema (with the dialect named)."""
    return {"$schema": DRAFT_2020_12, **item}


def page_schema(item: JsonSchema, *, with_total: bool = True) -> JsonSchema:
    """The ``{items, next_cursor?, total}`` output of a list action."""
    props: dict[str, Any] = {
        "items": {"type": "array", "items": item},
        "next_cursor": {**CURSOR, "description": "Cursor for the next page; absent on the last page."},
    }
    required = ["items"]
    if with_total:
        props["total"] = TOTAL
        required.append("total")
    return output_schema(obj(props, required))


def dealer_action(
    name: str,
    *,
    title: str,
    description: str,
    input: JsonSchema,
    output: JsonSchema,
    scope: str,
    side_effect: bool = False,
    destructive: bool = False,
    idempotent: bool = True,
    cacheable: bool = False,
    pii: bool = True,
    timeout_s: float = 5.0,
    tags: tuple[str, ...] = (),
    example: Mapping[str, Any] | None = None,
) -> Action:
    """An action run by the dealer-data adapter; its domain is the scope's ``amcp:<domain>:...`` part."""
    return Action(
        name=name,
        type="tool.run",
        title=title,
        description=description,
        input_schema=input,
        output_schema=output,
        adapter=ADAPTER_ID,
        scope=scope,
        side_effect=side_effect,
        destructive=destructive,
        idempotent=idempotent,
        cacheable=cacheable,
        pii=pii,
        timeout_s=timeout_s,
        dealer_scoped=True,
        domain=scope.split(":")[1],
        tags=tags,
        example=example,
    )


COMPANY_ID: JsonSchema = {"type": "string", "minLength": 1, "maxLength": 128}


def admin_action(
    name: str,
    description: str,
    props: Mapping[str, JsonSchema],
    required: Sequence[str],
    *,
    write: bool,
    adapter: str,
    tags: tuple[str, ...] = (),
    per_dealership: bool = False,
    idempotent: bool = True,
    timeout_s: float = 10.0,
) -> Action:
    """An ``admin.*`` action: company-scoped (``company_id`` required), ``amcp:admin:read|write``."""
    head: dict[str, JsonSchema] = {"company_id": COMPANY_ID}
    if per_dealership:
        head["dealership_id"] = DEALERSHIP_ID
    return Action(
        name=name,
        type="tool.run",
        title=name,
        description=description,
        input_schema={
            "type": "object",
            "properties": {**head, **props},
            "required": [*head, *required],
            "additionalProperties": False,
        },
        output_schema=None,
        adapter=adapter,
        scope="amcp:admin:write" if write else "amcp:admin:read",
        side_effect=write,
        idempotent=idempotent,
        dealer_scoped=False,
        timeout_s=timeout_s,
        domain="admin",
        tags=("admin", *tags),
    )


def new_id(prefix: str) -> str:
    """A fresh server-scoped identifier such as ``lead_3f2c...``."""
    return f"{prefix}_{uuid.uuid4().hex}"


def require_dealership(ctx: ExecutionContext) -> str:
    """The dealership the gateway resolved for this call."""
    if not ctx.dealership_id:
        raise InvalidParams("dealership_id is required.", details={"field": "dealership_id"})
    return ctx.dealership_id


def result(output: Any, **metadata: Any) -> AdapterResult:
    """A ``tool.result`` with optional metadata."""
    return AdapterResult(output=output, metadata=dict(metadata))


def opt_str(payload: Mapping[str, Any], key: str) -> str | None:
    """``payload[key]`` when it is a non-empty string, else ``None``."""
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def str_tuple(payload: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """``payload[key]`` as a tuple of strings (absent → empty)."""
    value = payload.get(key) or ()
    return tuple(str(v) for v in value)
