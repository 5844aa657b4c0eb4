"""Tool results that fit a model's context: compact views, one-line summaries, pages cut to the size budget.

- Search and list tools answer a **compact view** by default: per item only the fields an agent needs to
  choose (for vehicles: id, VIN, year, make, model, trim, price, mileage, status and a link), with the full
  record one ``get`` away or behind ``view: "full"``. Views are dict projections of the gateway's output (no
  model is re-validated).
- The **text content** is a one-line summary (``"20 of 1,432 vehicles; pass next_cursor for more"``).
  2025-11-25 era: the serialized JSON of ``structuredContent`` follows it in a second text block, as that
  spec asks of tools with an ``outputSchema`` for backwards compatibility. 2026-07-28 era: the summary only
  (hosts of that era read ``structuredContent``).
- Over the size budget a list answers the first items that fit (the surface asks the gateway again with a
  smaller ``limit``, so ``next_cursor`` stays the gateway's own) with the summary; a single object over budget
  answers its summary and a ``resource_link`` to read the whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VEHICLE = ("id", "vin", "year", "make", "model", "trim", "price", "mileage", "status", "vdp_url")
COMPACT_FIELDS: dict[str, tuple[str, ...]] = {
    "inventory.search": VEHICLE,
    "knowledge.search_inventory": VEHICLE,
    "leads.list": ("id", "status", "customer_id", "vehicle_id", "source", "appointment_id", "created_at"),
    "customers.list": ("id", "first_name", "last_name", "preferred_channel", "possible_duplicate_of", "created_at"),
    "consent.list": ("id", "customer_id", "lead_id", "scope", "allowed_channels", "status", "expires_at"),
    "service.list_appointments": ("id", "kind", "status", "start", "customer_id", "vehicle_id"),
    "service.list_repair_orders": (
        "id",
        "ro_number",
        "status",
        "customer_id",
        "vin",
        "vehicle_description",
        "total",
        "promised_at",
    ),
}
"""Tools with a compact view, and the item fields it keeps."""

NOUNS: dict[str, str] = {
    "inventory.search": "vehicles",
    "knowledge.search_inventory": "vehicles",
    "leads.list": "leads",
    "customers.list": "customers",
    "consent.list": "consent records",
    "service.list_appointments": "appointments",
    "service.list_repair_orders": "repair orders",
    "events.list": "events",
    "workflow.list_runs": "workflow runs",
}
NARROW: dict[str, str] = {
    "inventory.search": "narrow by make, model, price, year or body",
    "knowledge.search_inventory": "narrow the query",
    "leads.list": "narrow by status or date",
    "service.list_repair_orders": "narrow by status",
}


def has_view(action_name: str) -> bool:
    """Whether tool ``action_name`` takes ``view`` (compact by default)."""
    return action_name in COMPACT_FIELDS


def compact(action_name: str, output: Any) -> Any:
    """The compact view of a list output (items projected to the tool's fields); anything else unchanged."""
    fields = COMPACT_FIELDS.get(action_name)
    if fields is None or not isinstance(output, dict):
        return output
    items = output.get("items")
    if not isinstance(items, list):
        return output
    projected = [{k: item[k] for k in fields if k in item} if isinstance(item, dict) else item for item in items]
    return {**output, "items": projected}


def headline(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The few fields that identify an object (for an answer too large to carry it whole)."""
    keep = VEHICLE if "vin" in obj and "make" in obj else ("id", "status", "name", "created_at", "updated_at")
    return {k: obj[k] for k in keep if k in obj}


def is_page(output: Any) -> bool:
    """Whether ``output`` is a page of a list (``{items: [...], ...}``)."""
    return isinstance(output, dict) and isinstance(output.get("items"), list)


def summary(action_name: str, output: Any) -> str:
    """A one-line human summary of a result."""
    if is_page(output):
        count = len(output["items"])
        noun = NOUNS.get(action_name, "items")
        total = output.get("total")
        at_least = "+" if output.get("total_relation") == "gte" else ""  # a lower bound (inventory.search)
        head = f"{count:,} of {total:,}{at_least} {noun}" if isinstance(total, int) else f"{count:,} {noun}"
        more = []
        if output.get("next_cursor"):
            more.append("pass next_cursor for more")
            if action_name in NARROW:
                more.append(NARROW[action_name])
        return "; ".join([head, *more]) + "."
    if isinstance(output, Mapping):
        label = _label(output)
        return f"{label}." if label else f"An object with {len(output)} fields."
    return "Done."


def _label(obj: Mapping[str, Any]) -> str:
    if all(k in obj for k in ("year", "make", "model")):
        price = obj.get("price")
        money = ""
        if isinstance(price, Mapping) and isinstance(price.get("amount_minor"), int):
            money = f", {price['amount_minor'] / 100:,.2f} {price.get('currency', '')}".rstrip()
        return f"{obj['year']} {obj['make']} {obj['model']} {obj.get('trim') or ''}".strip() + money
    parts = [f"{k} {obj[k]}" for k in ("id", "status", "name") if isinstance(obj.get(k), str | int)]
    return ", ".join(parts)


def items_that_fit(output: Mapping[str, Any], max_bytes: int, size: Any) -> int:
    """How many leading items of a page fit in ``max_bytes`` (at least 1 when there are any)."""
    items = output["items"]
    overhead = size({**output, "items": []}) + 64
    used, count = overhead, 0
    for item in items:
        used += size(item) + 1
        if used > max_bytes:
            break
        count += 1
    return max(count, 1) if items else 0
