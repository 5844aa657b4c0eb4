"""What this MCP server says about itself, and the answer to a host's ``initialize`` known before the SDK loads.

The identity (name, title, description, version) and the instructions are given to the SDK's server by
:class:`~.server.McpSurface`. :func:`early_answer` is the direct path beside the SDK for one message only: the
``initialize`` a desktop host sends the moment it spawns ``forecourt mcp --stdio``. Its answer depends on nothing
the app builds (the protocol version the client asked for, when the handshake era has it, and fixed capabilities),
so :mod:`.stdio` can send it while the MCP SDK, the catalogue and the store are still loading. It answers only a
request whose every field it can check the way the SDK's models would accept it, and ``None`` (the SDK answers,
once built) for anything else. tests/mcp/test_mcp_stdio_handshake.py compares its answers with the SDK's server,
case by case, and the SDK's own answer to the same request is compared again at run time (:mod:`.stdio`).

This module imports nothing of the SDK: it is what runs before the SDK is there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from forecourt import caching

NAME = "forecourt"
TITLE = "Forecourt AutomotiveMCP"
DESCRIPTION = "A car dealership's inventory, leads, service lane and deals over AutomotiveMCP."
INSTRUCTIONS = (
    "Forecourt puts a car dealership's systems behind AutomotiveMCP. Every call is scoped to one dealership "
    "(`dealership_id`, optional when your credential covers exactly one). Lists return {items, next_cursor, "
    "total}: pass next_cursor back for more. Money is integer minor units with an ISO 4217 currency, mileage "
    "has a unit, times are RFC 3339 with an offset. Errors are {error: {code, message, details, retryable}}. "
    "Resources use automotive://dealers/{dealership_id}/{vehicles|leads|customers|repair_orders|appointments|"
    "consents}[/{id}]; subscribe to a collection to hear about changes, or replay them with events.list."
)

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The SDK's ``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS`` (a test keeps them equal)."""
LATEST_HANDSHAKE_VERSION = "2025-11-25"
"""What the SDK answers a client asking for a version outside :data:`HANDSHAKE_VERSIONS`."""

STDIO_CAPABILITIES: Mapping[str, Any] = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": True},
    "tools": {"listChanged": True},
}
"""What the SDK derives from the stdio surface's handlers (federated: completions and logging are relayed)."""

_PARAMS = frozenset({"protocolVersion", "capabilities", "clientInfo"})
_CLIENT_INFO_TEXT = ("title", "description", "websiteUrl")
_NESTED_CAPABILITIES = {"sampling": ("context", "tools"), "elicitation": ("form", "url")}
_MAPS_OF_OBJECTS = ("experimental", "extensions")


@caching.once
def server_version() -> str:
    """The installed Forecourt version (the ``version`` of ``serverInfo``)."""
    try:
        return version("forecourt")
    except PackageNotFoundError:
        return "0"


def initialize_result(requested: str) -> dict[str, Any]:
    """The ``initialize`` result of the stdio server for a client asking for protocol version ``requested``."""
    return {
        "capabilities": json.loads(json.dumps(STDIO_CAPABILITIES)),
        "instructions": INSTRUCTIONS,
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION,
        "serverInfo": {"description": DESCRIPTION, "name": NAME, "title": TITLE, "version": server_version()},
    }


def early_answer(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC answer to ``line`` when it is an ``initialize`` the SDK would accept as it stands, else None."""
    try:  # as strict as the SDK's reader: UTF-8, and no NaN or Infinity
        message = json.loads(line.decode("utf-8"), parse_constant=_refuse_constant)
    except ValueError:
        return None
    if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id, params = message["id"], message["params"]
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize" or not _is_id(request_id):
        return None
    if not isinstance(params, dict) or set(params) != _PARAMS or not isinstance(params["protocolVersion"], str):
        return None
    if not (_client_info_ok(params["clientInfo"]) and _capabilities_ok(params["capabilities"])):
        return None
    return {"jsonrpc": "2.0", "id": request_id, "result": initialize_result(params["protocolVersion"])}


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _client_info_ok(info: Any) -> bool:
    """``Implementation``: ``name`` and ``version`` strings; optional text fields; icons are left to the SDK."""
    if not isinstance(info, dict) or "icons" in info:
        return False
    if not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
        return False
    return all(info.get(key) is None or isinstance(info[key], str) for key in _CLIENT_INFO_TEXT)


def _capabilities_ok(capabilities: Any) -> bool:
    """``ClientCapabilities`` in the shapes hosts send; ``tasks`` (and anything odder) is left to the SDK."""
    if not isinstance(capabilities, dict) or "tasks" in capabilities:
        return False
    roots = capabilities.get("roots")
    if roots is not None and not (
        isinstance(roots, dict) and set(roots) <= {"listChanged"} and roots.get("listChanged") in (None, True, False)
    ):
        return False
    for name, parts in _NESTED_CAPABILITIES.items():
        value = capabilities.get(name)
        if value is not None and not (
            isinstance(value, dict) and set(value) <= set(parts) and all(_object_or_none(v) for v in value.values())
        ):
            return False
    for name in _MAPS_OF_OBJECTS:
        value = capabilities.get(name)
        if value is not None and not (isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())):
            return False
    return True


def _object_or_none(value: Any) -> bool:
    return value is None or isinstance(value, dict)
