"""MCP tools generated from the action catalogue, and tool results built from gateway outcomes.

Rules:

- Every action except the admin ones is a tool. The tool name is the action name (``inventory.search``);
  actions named ``aap.*`` (the Auto Agent Protocol skills) become ``aap_*`` tools (``aap.inventory.search``
  → ``aap_inventory_search``) and take and return the AAP payloads unchanged.
- ``inputSchema`` is the action's input schema, except that a top-level ``oneOf``/``anyOf``/``allOf`` (which
  several MCP hosts refuse) is folded into the description; the gateway still enforces the full schema.
- ``outputSchema`` is the action's output schema when it describes an object; the result's
  ``structuredContent`` is the action output and the text content is the same JSON.
- Annotations: ``readOnlyHint`` = no side effect; ``destructiveHint`` and ``idempotentHint`` from the action;
  ``openWorldHint`` = the action reaches systems outside Forecourt (model runtimes, upstream servers).
- Failures the caller can act on are tool results with ``isError: true`` and the AutomotiveMCP body
  ``{"error": {code, message, details, retryable}}`` as JSON text (not as ``structuredContent``: some clients
  validate that against the tool's ``outputSchema`` even on errors).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types as types
import orjson

from forecourt.actions.base import Action, Catalogue
from forecourt.actions.dealer.common import DEALERSHIP_ID
from forecourt.errors import ForecourtError

AAP_PREFIX = "aap."
# Adapters that only touch Forecourt's own store; anything else reaches out (models, upstream servers, ...).
CLOSED_WORLD_ADAPTERS = frozenset({"dealer-data", "service-appointments", "valuation", "aap"})
_COMBINATORS = ("oneOf", "anyOf", "allOf")


class ResultTooLarge(ForecourtError):
    """A tool result exceeds the MCP surface's size cap; ask for a smaller page."""

    code = "mcp.result_too_large"
    http_status = 413
    jsonrpc_code = -32000
    default_message = "The result is too large; ask for a smaller page (limit) or narrower filters."


def tool_name(action_name: str) -> str:
    """The MCP tool name of an action (``aap.lead.submit`` → ``aap_lead_submit``; others unchanged)."""
    if action_name.startswith(AAP_PREFIX):
        return action_name.replace(".", "_")
    return action_name


def exposed(action: Action) -> bool:
    """Whether an action is offered as an MCP tool (everything except the admin API)."""
    return action.domain != "admin" and not action.name.startswith("admin.")


def _alternatives(schema: Mapping[str, Any]) -> str:
    """A sentence describing top-level combinators such as ``oneOf: [{required: [a]}, {required: [b]}]``."""
    notes: list[str] = []
    for key in _COMBINATORS:
        options = schema.get(key)
        if not isinstance(options, list):
            continue
        names = [", ".join(o.get("required", [])) for o in options if isinstance(o, Mapping) and o.get("required")]
        if names:
            verb = {"oneOf": "exactly one of", "anyOf": "at least one of", "allOf": "all of"}[key]
            notes.append(f"Provide {verb}: " + "; ".join(f"`{n}`" for n in names) + ".")
    return " ".join(notes)


def addressed_separately(action: Action) -> bool:
    """Whether the tool adds a ``dealership_id`` argument the action's own payload does not have.

    Dealer-scoped actions whose payload is fixed by another protocol (the AAP skills) are addressed this
    way: the surface takes ``dealership_id`` out of the arguments and gives it to the gateway as the
    addressed dealership, so the AAP payload itself stays unchanged.
    """
    properties = action.input_schema.get("properties")
    return action.dealer_scoped and isinstance(properties, Mapping) and "dealership_id" not in properties


def input_schema_for(action: Action) -> dict[str, Any]:
    """The tool's ``inputSchema``: the action's, minus top-level combinators (always ``type: object``)."""
    schema = {k: v for k, v in action.input_schema.items() if k not in _COMBINATORS}
    schema["type"] = "object"
    if addressed_separately(action):
        schema["properties"] = {"dealership_id": DEALERSHIP_ID, **schema["properties"]}
    return schema


def output_schema_for(action: Action) -> dict[str, Any] | None:
    """The tool's ``outputSchema`` when the action's output is an object, else ``None``."""
    schema = action.output_schema
    if not schema or schema.get("type") != "object":
        return None
    return dict(schema)


def describe(action: Action) -> str:
    """The tool description: the action's (written for a model), its input rules and the scope it needs."""
    parts = [action.description.strip()]
    combinators = _alternatives(action.input_schema)
    if combinators:
        parts.append(combinators)
    if action.anonymous_allowed:
        parts.append("Public: callable without credentials at a dealership that publishes its agent.")
    elif action.scope:
        parts.append(f"Requires scope {action.scope}.")
    return " ".join(p for p in parts if p)


def annotations_for(action: Action) -> types.ToolAnnotations:
    """MCP behaviour hints for ``action``."""
    return types.ToolAnnotations(
        title=action.title,
        read_only_hint=not action.side_effect,
        destructive_hint=action.destructive if action.side_effect else False,
        idempotent_hint=action.idempotent,
        open_world_hint=action.adapter not in CLOSED_WORLD_ADAPTERS and not action.name.startswith(AAP_PREFIX),
    )


class ToolSet:
    """The catalogue seen as MCP tools (tool definitions are built once per action and reused)."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self._tools: dict[str, tuple[Action, types.Tool]] = {}

    def action_for(self, name: str) -> Action | None:
        """The exposed action behind tool ``name``."""
        if name.startswith("aap_"):
            for action in self.catalogue.all():
                if action.name.startswith(AAP_PREFIX) and tool_name(action.name) == name:
                    return action
            return None
        found = self.catalogue.get(name)
        return found if found is not None and exposed(found) and not name.startswith(AAP_PREFIX) else None

    def tool(self, action: Action) -> types.Tool:
        """The MCP tool for ``action``."""
        cached = self._tools.get(action.name)
        if cached is not None and cached[0] is action:
            return cached[1]
        tool = types.Tool(
            name=tool_name(action.name),
            title=action.title,
            description=describe(action),
            input_schema=input_schema_for(action),
            output_schema=output_schema_for(action),
            annotations=annotations_for(action),
        )
        self._tools[action.name] = (action, tool)
        return tool

    def tools(self, actions: Iterable[Action]) -> list[types.Tool]:
        """Tools for the exposed ``actions``, sorted by tool name."""
        return sorted((self.tool(a) for a in actions if exposed(a)), key=lambda t: t.name)

    def all_tools(self) -> list[types.Tool]:
        """Every tool the catalogue offers (for docs)."""
        return self.tools(self.catalogue.all())


_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(value: Any) -> str:
    """Compact JSON text for a tool result (orjson; the standard library for what it refuses, e.g. huge ints)."""
    try:
        return orjson.dumps(value, default=str, option=_ORJSON_OPTIONS).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def success_result(action: Action, output: Any, *, max_bytes: int) -> types.CallToolResult:
    """The tool result for an action's output (``structuredContent`` whenever the output is an object)."""
    text = dumps(output)
    if len(text) > max_bytes:
        return error_result(ResultTooLarge(details={"max_bytes": max_bytes}))
    structured = output if isinstance(output, dict) else None
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def error_body(exc: ForecourtError) -> dict[str, Any]:
    """The AutomotiveMCP error body ``{error: {code, message, details?, retryable, trace_id?}}``."""
    error = exc.to_dict()
    if exc.trace_id:
        error["trace_id"] = exc.trace_id
    return {"error": error}


def error_result(exc: ForecourtError) -> types.CallToolResult:
    """A tool-level error (``isError: true``) the model can read and act on."""
    # No structuredContent: some clients validate it against the tool's outputSchema even when isError is set.
    return types.CallToolResult(content=[types.TextContent(text=dumps(error_body(exc)))], is_error=True)
