"""MCP tools generated from the action catalogue, and tool results built from gateway outcomes.

Rules:

- Every action except the admin ones is a tool. The canonical tool name is the action name
  (``inventory.search``); actions named ``aap.*`` (the Auto Agent Protocol skills) become ``aap_*`` tools
  (``aap.inventory.search`` → ``aap_inventory_search``) that take the AAP payload without its constant ``type``
  (added here) and return it unchanged. LLM-safe names and toolsets: :mod:`.toolsets`.
- Schemas: :mod:`.schemas` (self-contained, lean ``inputSchema``; top-level ``outputSchema``).
- Results: :mod:`.views` (compact views of lists, a one-line summary as text, pages cut to the size budget).
- Annotations: ``readOnlyHint`` = no side effect; ``destructiveHint`` and ``idempotentHint`` from the action;
  ``openWorldHint`` = the action reaches systems outside Forecourt (model runtimes, upstream servers).
- Failures the caller can act on are tool results with ``isError: true`` and the AutomotiveMCP body
  ``{"error": {code, message, details, retryable}}`` as JSON text (not as ``structuredContent``: some clients
  validate that against the tool's ``outputSchema`` even on errors).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from forecourt import caching
from forecourt.actions.toolsets import NameMode, llm_name, llm_names
from forecourt.contract import Action, Catalogue
from forecourt.errors import ForecourtError, ResultTooLarge, UnknownAction
from forecourt.surfaces.mcp import schemas, views
from forecourt.surfaces.mcp.uris import item_uri

if TYPE_CHECKING:  # the SDK and its types are imported where they are built: a listing of names needs neither
    import mcp_types as types
    from mcp import MCPError

AAP_PREFIX = "aap."
# Adapters that only touch Forecourt's own store; anything else reaches out (models, upstream servers, ...).
CLOSED_WORLD_ADAPTERS = frozenset({"dealer-data", "service-appointments", "valuation", "aap"})


_SHOWN_TOOL_NAME = re.compile(r"^[A-Za-z0-9._:/-]{1,128}$")


def unknown_tool(name: str) -> MCPError:
    """The answer to a ``tools/call`` of a tool that is not there: JSON-RPC ``-32602``, naming the tool.

    Both eras' specifications give an unknown tool name as an invalid-params error (2026-07-28:
    ``InvalidParamsError``, "Unknown tool name or invalid tool arguments"), which that era's HTTP table answers
    ``400``. ``data`` is the AutomotiveMCP error (``action.unknown``, ``details.tool``); a name that is not
    tool-name-like is not quoted back.
    """
    shown = name if _SHOWN_TOOL_NAME.fullmatch(name) else None
    message = f"Unknown tool: {shown}." if shown else "Unknown tool."
    error = UnknownAction(message, details={"tool": shown} if shown else {})
    import mcp_types as types
    from mcp import MCPError

    return MCPError(types.INVALID_PARAMS, message, error.to_dict())


def tool_name(action_name: str) -> str:
    """The canonical MCP tool name of an action (``aap.lead.submit`` → ``aap_lead_submit``; others unchanged)."""
    if action_name.startswith(AAP_PREFIX):
        return action_name.replace(".", "_")
    return action_name


def exposed(action: Action) -> bool:
    """Whether an action is offered as an MCP tool (everything except the admin API and discovery metadata)."""
    return not action.public and action.domain != "admin" and not action.name.startswith("admin.")


def input_schema_for(action: Action) -> dict[str, Any]:
    """The tool's ``inputSchema`` (see :mod:`forecourt.surfaces.mcp.schemas`)."""
    return schemas.input_schema(action, with_view=views.has_view(action.name))


def output_schema_for(action: Action) -> dict[str, Any] | None:
    """The tool's ``outputSchema``: the top level of the action's output schema, or ``None``."""
    return schemas.output_schema(action)


def example_line(action: Action) -> str | None:
    """``Example: {...}``: the action's example call as compact JSON, or ``None`` when it has none."""
    if action.example is None:
        return None
    return "Example: " + json.dumps(action.example, ensure_ascii=False)


def describe(action: Action) -> str:
    """The tool description: the action's (written for a model), its input rules, and its example call last."""
    parts = [action.description.strip()]
    combinators = schemas.alternatives(action.input_schema)
    if combinators:
        parts.append(combinators)
    if action.name.startswith(AAP_PREFIX):
        parts.append("Send the payload without `type`; it is added for you.")
    if action.anonymous_allowed:
        parts.append("Public: callable without credentials at a dealership that publishes its agent.")
    example = example_line(action)
    if example:
        parts.append(example)
    return " ".join(p for p in parts if p)


def annotations_for(action: Action) -> types.ToolAnnotations:
    """MCP behaviour hints for ``action``."""
    import mcp_types as types

    return types.ToolAnnotations(
        read_only_hint=not action.side_effect,
        destructive_hint=action.destructive if action.side_effect else False,
        idempotent_hint=action.idempotent,
        open_world_hint=action.adapter not in CLOSED_WORLD_ADAPTERS and not action.name.startswith(AAP_PREFIX),
    )


class ToolSet:
    """The catalogue seen as MCP tools (tool definitions are built once per action and naming mode, and reused).

    One index maps every accepted tool name — canonical and LLM-safe — to its action, so ``tools/call``
    resolves either form with one dict lookup; the index follows catalogue changes.
    """

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self._tools: caching.Cache[tuple[str, NameMode], tuple[Action, types.Tool]] = caching.lru(
            "surfaces.mcp.tools", 4096
        )
        self._by_tool: dict[str, str] = {}
        self._llm: dict[str, str] = {}
        self._aap_type: dict[str, str] = {}
        self._indexed = -1

    def _index(self) -> None:
        if self._indexed == self.catalogue.version:
            return
        actions = [a for a in self.catalogue.all() if exposed(a)]
        canonical = {tool_name(a.name): a.name for a in actions}
        self._llm = {canonical[c]: safe for c, safe in llm_names(canonical).items()}
        by_tool = {safe: a for a, safe in self._llm.items()}
        by_tool.update(canonical)
        self._by_tool = by_tool
        self._aap_type = {a.name: t for a in actions if (t := schemas.aap_type(a)) is not None}
        self._indexed = self.catalogue.version

    def action_for(self, name: str) -> Action | None:
        """The exposed action behind tool ``name``, canonical or LLM-safe (one dict lookup)."""
        if self._indexed != self.catalogue.version:
            self._index()
        action_name = self._by_tool.get(name)
        return self.catalogue.get(action_name) if action_name is not None else None

    def name_of(self, action: Action, mode: NameMode = "canonical") -> str:
        """The listed name of ``action`` in naming ``mode``."""
        if mode == "llm":
            self._index()
            return self._llm.get(action.name) or llm_name(tool_name(action.name))
        return tool_name(action.name)

    def prepare(self, action: Action, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The gateway payload of a call and the view the door still applies (``view`` taken out, AAP ``type`` added).

        An action that takes ``view`` itself (``inventory.search``: a compact search reads less) is handed the
        view asked for, compact unless ``full``; its output is already shaped, so the door applies ``full``.
        """
        view = arguments.pop("view", None) if views.has_view(action.name) else None
        shown = "full" if view == "full" else "compact"
        properties = action.input_schema.get("properties")
        if views.has_view(action.name) and isinstance(properties, dict) and "view" in properties:
            arguments["view"] = shown
            shown = "full"
        aap = self._aap_type.get(action.name)
        if aap is not None and "type" not in arguments:
            arguments["type"] = aap
        return arguments, shown

    def tool(self, action: Action, mode: NameMode = "canonical") -> types.Tool:
        """The MCP tool for ``action``."""
        cached = self._tools.get((action.name, mode))
        if cached is not None and cached[0] is action:
            return cached[1]
        import mcp_types as types

        tool = types.Tool(
            name=self.name_of(action, mode),
            title=action.title,
            description=describe(action),
            input_schema=input_schema_for(action),
            output_schema=output_schema_for(action),
            annotations=annotations_for(action),
        )
        self._tools.put((action.name, mode), (action, tool))
        return tool

    def tools(self, actions: Iterable[Action], mode: NameMode = "canonical") -> list[types.Tool]:
        """Tools for the exposed ``actions``, sorted by tool name."""
        return sorted((self.tool(a, mode) for a in actions if exposed(a)), key=lambda t: t.name)

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


def wire_json(value: Any) -> bytes | None:
    """``value`` as the JSON a response carries (as :mod:`.direct` encodes it); ``None`` where orjson refuses it."""
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return None


def success_result(
    action: Action,
    output: Any,
    *,
    max_bytes: int,
    view: str = "compact",
    modern: bool = False,
    encoded: bool = False,
) -> dict[str, Any] | None:
    """The tool result (wire form) for an action's output, or ``None`` when it is over ``max_bytes``.

    ``structuredContent`` whenever the output is an object (any JSON value in the 2026-07-28 era); the text is
    a one-line summary, followed in the 2025-11-25 era by the serialized JSON (see :mod:`.views`). Both the
    SDK's handler and the direct path (:mod:`.direct`) answer with this one shape.

    ``encoded``: for an encoder that takes ``orjson.Fragment`` (the direct path), a 2026-07-28 result's
    ``structuredContent`` comes already encoded, by the same encoding that measured it against ``max_bytes``:
    the output is serialized once per call, not twice.
    """
    shaped = views.compact(action.name, output) if view == "compact" else output
    structured = shaped if isinstance(shaped, dict) or (modern and shaped is not None) else None
    if encoded and modern and structured is not None and (raw := wire_json(shaped)) is not None:
        if (len(raw) if raw.isascii() else len(raw.decode())) > max_bytes:
            return None
        summary = {"type": "text", "text": views.summary(action.name, shaped)}
        return {"content": [summary], "isError": False, "structuredContent": orjson.Fragment(raw)}
    text = dumps(shaped)
    if len(text) > max_bytes:
        return None
    content: list[dict[str, Any]] = [{"type": "text", "text": views.summary(action.name, shaped)}]
    if not modern or structured is None:
        content.append({"type": "text", "text": text})
    result: dict[str, Any] = {"content": content, "isError": False}
    if structured is not None:
        result["structuredContent"] = structured
    return result


_ITEM_URIS = {
    "inventory.get": "vehicles",
    "leads.get": "leads",
    "customers.get": "customers",
    "consent.get": "consents",
    "service.get_repair_order": "repair_orders",
    "service.get_appointment": "appointments",
}


def too_large(action: Action, output: Any, dealership_id: str | None, *, max_bytes: int) -> dict[str, Any]:
    """The answer for a single object over budget: its summary and a link to read it whole, else the error."""
    collection = _ITEM_URIS.get(action.name)
    item_id = output.get("id") if isinstance(output, dict) else None
    if collection is None or not isinstance(item_id, str) or not dealership_id:
        return error_wire(ResultTooLarge(details={"max_bytes": max_bytes}))
    uri = item_uri(dealership_id, collection, item_id)
    return {
        "content": [
            {"type": "text", "text": views.summary(action.name, output) + " Too large to return here; read the link."},
            {"type": "resource_link", "uri": uri, "name": item_id, "mimeType": "application/json"},
        ],
        "structuredContent": views.headline(output),
        "isError": False,
    }


def error_body(exc: ForecourtError) -> dict[str, Any]:
    """The AutomotiveMCP error body ``{error: {code, message, details?, retryable, trace_id?}}``."""
    error = exc.to_dict()
    if exc.trace_id:
        error["trace_id"] = exc.trace_id
    return {"error": error}


def error_wire(exc: ForecourtError) -> dict[str, Any]:
    """A tool-level error (``isError: true``) the model can read and act on, in wire form."""
    # No structuredContent: some clients validate it against the tool's outputSchema even when isError is set.
    return {"content": [{"type": "text", "text": dumps(error_body(exc))}], "isError": True}


def error_result(exc: ForecourtError) -> types.CallToolResult:
    """:func:`error_wire` as the SDK's result model."""
    import mcp_types as types

    return types.CallToolResult.model_validate(error_wire(exc))


def protocol_error(exc: ForecourtError) -> MCPError:
    """A JSON-RPC error carrying the AutomotiveMCP error body in ``data``."""
    data = exc.to_dict()
    if exc.trace_id:
        data["trace_id"] = exc.trace_id
    from mcp import MCPError

    return MCPError(exc.jsonrpc_code, exc.message, data)
