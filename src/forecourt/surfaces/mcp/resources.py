"""MCP resources: templates for the URI scheme, cursor-paged listings, and reads through gateway actions.

``resources/list`` pages through: first the manifest, each of the caller's dealerships and their collections;
then, one page at a time, the vehicles of each dealership (through ``inventory.search``). The cursor is
opaque (a dealership position and the signed ``inventory.search`` cursor), never PII.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp import MCPError

from forecourt.gateway.base import Outcome, Principal
from forecourt.surfaces.mcp.uris import (
    COLLECTIONS,
    MANIFEST_URI,
    SCHEME,
    ResourceUri,
    collection_uri,
    dealer_uri,
    item_uri,
)

JSON = "application/json"
RESOURCE_NOT_FOUND = -32002
Invoke = Callable[[str, dict[str, Any]], Awaitable[Outcome]]


def not_found(uri: str) -> MCPError:
    """The JSON-RPC error for a URI outside the scheme (``-32002``, AutomotiveMCP ``not_found``)."""
    data = {"code": "not_found", "message": "Resource not found.", "retryable": False, "details": {"uri": uri[:256]}}
    return MCPError(RESOURCE_NOT_FOUND, "Resource not found.", data)


def templates() -> list[types.ResourceTemplate]:
    """Every resource template of the scheme."""
    out = [
        types.ResourceTemplate(
            uri_template=f"{SCHEME}://dealers/{{dealership_id}}",
            name="dealership",
            title="Dealership",
            description="The dealership (rooftop): address, hours, brands, capabilities (dealer.information).",
            mime_type=JSON,
        )
    ]
    for c in COLLECTIONS:
        out.append(
            types.ResourceTemplate(
                uri_template=f"{SCHEME}://dealers/{{dealership_id}}/{c.segment}",
                name=c.segment,
                title=f"{c.title} list",
                description=(
                    f"The dealership's {c.segment.replace('_', ' ')} ({c.list_action}): "
                    "{items, next_cursor, total}; add ?cursor=<next_cursor>&limit=<n> for more. "
                    "Subscribe to hear about every created, updated or deleted member."
                ),
                mime_type=JSON,
            )
        )
        out.append(
            types.ResourceTemplate(
                uri_template=f"{SCHEME}://dealers/{{dealership_id}}/{c.segment}/{{{c.id_field}}}",
                name=c.resource_type.value,
                title=c.title,
                description=f"One {c.title.lower()} by server id ({c.get_action}). Subscribe for changes.",
                mime_type=JSON,
            )
        )
    return out


def encode_cursor(position: int, inner: str | None = None) -> str:
    """An opaque ``resources/list`` cursor."""
    body: dict[str, Any] = {"d": position}
    if inner:
        body["c"] = inner
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str | None]:
    """The position and inner cursor of a ``resources/list`` cursor; ``INVALID_PARAMS`` when malformed."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        body = json.loads(raw)
        position = body["d"]
        inner = body.get("c")
        if not isinstance(position, int) or position < 0 or (inner is not None and not isinstance(inner, str)):
            raise ValueError("cursor")
    except (ValueError, KeyError, TypeError):
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor.", {"code": "invalid_cursor"}) from None
    return position, inner


def static_resources(principal: Principal, allowed: set[str]) -> list[types.Resource]:
    """The manifest, the caller's dealerships and the collections it may list there."""
    out = [types.Resource(uri=MANIFEST_URI, name="manifest", title="AutomotiveMCP manifest", mime_type=JSON)]
    for d in sorted(principal.dealership_ids):
        if "dealer.information" in allowed:
            out.append(types.Resource(uri=dealer_uri(d), name=d, title=f"Dealership {d}", mime_type=JSON))
        for c in COLLECTIONS:
            if c.list_action in allowed:
                out.append(
                    types.Resource(
                        uri=collection_uri(d, c.segment), name=f"{d}/{c.segment}", title=c.title, mime_type=JSON
                    )
                )
    return out


def _vehicle_title(v: Mapping[str, Any]) -> str:
    return " ".join(str(v[k]) for k in ("year", "make", "model", "trim") if v.get(k))


async def list_page(
    principal: Principal, allowed: set[str], cursor: str | None, page_size: int, invoke: Invoke
) -> types.ListResourcesResult:
    """One ``resources/list`` page for ``principal``."""
    dealerships = sorted(principal.dealership_ids)
    can_search = "inventory.search" in allowed and bool(dealerships)
    if cursor is None:
        first_next = encode_cursor(0) if can_search else None
        return types.ListResourcesResult(resources=static_resources(principal, allowed), next_cursor=first_next)
    position, inner = decode_cursor(cursor)
    if not can_search or position >= len(dealerships):
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor.", {"code": "invalid_cursor"})
    d = dealerships[position]
    payload: dict[str, Any] = {"dealership_id": d, "limit": page_size}
    if inner:
        payload["cursor"] = inner
    outcome = await invoke("inventory.search", payload)
    output = outcome.output if isinstance(outcome.output, dict) else {}
    resources = [
        types.Resource(
            uri=item_uri(d, "vehicles", str(v["id"])),
            name=str(v.get("vin") or v["id"]),
            title=_vehicle_title(v) or None,
            mime_type=JSON,
        )
        for v in output.get("items", [])
        if isinstance(v, dict) and v.get("id")
    ]
    following = output.get("next_cursor")
    if isinstance(following, str):
        next_cursor: str | None = encode_cursor(position, following)
    elif position + 1 < len(dealerships):
        next_cursor = encode_cursor(position + 1)
    else:
        next_cursor = None
    return types.ListResourcesResult(resources=resources, next_cursor=next_cursor)


def read_request(parsed: ResourceUri) -> tuple[str, dict[str, Any]]:
    """The gateway action and payload that read a dealer, collection or item URI."""
    assert parsed.dealership_id is not None
    payload: dict[str, Any] = {"dealership_id": parsed.dealership_id}
    if parsed.kind == "dealer":
        return "dealer.information", payload
    assert parsed.collection is not None
    if parsed.kind == "collection":
        if parsed.cursor:
            payload["cursor"] = parsed.cursor
        if parsed.limit is not None:
            payload["limit"] = parsed.limit
        return parsed.collection.list_action, payload
    payload[parsed.collection.id_field] = parsed.resource_id
    return parsed.collection.get_action, payload
