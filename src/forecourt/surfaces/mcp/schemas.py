"""The JSON Schemas a tool is listed with: self-contained, small, and what a model needs to call it.

- ``inputSchema``: the action's input schema without the bounds the gateway enforces anyway (lengths, ranges,
  patterns), with every ``$ref`` inlined (the AAP schemas are bundled compound documents whose relative
  references simple hosts cannot resolve), top-level combinators folded into the description, ``dealership_id``
  added where the action takes it beside its payload, and for AAP skills the ``type`` property removed (it is a
  constant: the surface adds it). Search and list tools get ``view``.
- ``outputSchema``: the top level of the action's output schema (property names and types).
  Nested detail stays out of a model's context.
- Tools of upstream MCP servers keep the upstream's schemas unchanged.
The gateway still validates every call against the action's full input schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from forecourt.actions.common import DEALERSHIP_ID
from forecourt.contract import Action

AAP_PREFIX = "aap."
COMBINATORS = ("oneOf", "anyOf", "allOf")
VIEW = {
    "type": "string",
    "enum": ["compact", "full"],
    "description": "compact (default): the fields needed to choose; full: every field of each item.",
}


def aap_type(action: Action) -> str | None:
    """The constant request ``type`` of an AAP skill's payload (``inventory.search.request``), else ``None``."""
    if not action.name.startswith(AAP_PREFIX):
        return None
    prop = (action.input_schema.get("properties") or {}).get("type")
    const = prop.get("const") if isinstance(prop, Mapping) else None
    return const if isinstance(const, str) else None


def input_schema(action: Action, *, with_view: bool) -> dict[str, Any]:
    """The listed ``inputSchema`` of ``action`` (always ``type: object``)."""
    if action.owner_company_id is not None:  # an upstream server's tool: its own schema, unchanged
        return {**action.input_schema, "type": "object"}
    source: Mapping[str, Any] = action.input_schema
    if "$ref" in json.dumps(source):
        from forecourt.surfaces.openapi import self_contained  # with Starlette: only schemas with references

        source = self_contained(source)
    schema = {k: v for k, v in source.items() if k not in COMBINATORS and k not in ("$schema", "$id", "$defs")}
    schema["type"] = "object"
    properties = dict(schema.get("properties") or {})
    if aap_type(action) is not None:
        properties.pop("type", None)
        required = [r for r in schema.get("required", []) if r != "type"]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)
    if action.addressed_separately:
        properties = {"dealership_id": DEALERSHIP_ID, **properties}
    if with_view:
        properties["view"] = VIEW
    schema["properties"] = properties
    lean = _lean(schema)
    return lean if isinstance(lean, dict) else schema


_CHECKS_ONLY = frozenset(
    {"minLength", "maxLength", "minimum", "maximum", "pattern", "minItems", "maxItems", "uniqueItems", "$comment"}
)


def _lean(node: Any) -> Any:
    """``node`` without the bounds the gateway enforces anyway (lengths, ranges, patterns): they cost a model's
    context and do not change what it should send."""
    if isinstance(node, list):
        return [_lean(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (
            key in _CHECKS_ONLY
            or (key == "required" and value == [])
            or (key == "additionalProperties" and value is False)
        ):
            continue
        out[key] = value if key in ("enum", "const", "default", "examples") else _lean(value)
    return out


def _shallow(prop: Any) -> dict[str, Any]:
    if not isinstance(prop, Mapping):
        return {}
    kind = prop.get("type")
    if kind is None:
        return {}
    out: dict[str, Any] = {"type": kind}
    if "enum" in prop and isinstance(prop["enum"], list) and len(prop["enum"]) <= 8:
        out["enum"] = prop["enum"]
    return out


def output_schema(action: Action) -> dict[str, Any] | None:
    """The listed ``outputSchema``: the top level of the action's, when its output is an object; else ``None``."""
    schema = action.output_schema
    if not schema or schema.get("type") != "object":
        return None
    if action.owner_company_id is not None:
        return dict(schema)
    properties = schema.get("properties")
    out: dict[str, Any] = {"type": "object"}
    if isinstance(properties, Mapping):
        out["properties"] = {name: _shallow(prop) for name, prop in properties.items()}
    # No ``required``: an answer over the size budget carries a summary of the object, not all of it.
    return out


def alternatives(schema: Mapping[str, Any]) -> str:
    """A sentence describing top-level combinators such as ``oneOf: [{required: [a]}, {required: [b]}]``."""
    notes: list[str] = []
    for key in COMBINATORS:
        options = schema.get(key)
        if not isinstance(options, list):
            continue
        names = [", ".join(o.get("required", [])) for o in options if isinstance(o, Mapping) and o.get("required")]
        if names:
            verb = {"oneOf": "exactly one of", "anyOf": "at least one of", "allOf": "all of"}[key]
            notes.append(f"Provide {verb}: " + "; ".join(f"`{n}`" for n in names) + ".")
    return " ".join(notes)
