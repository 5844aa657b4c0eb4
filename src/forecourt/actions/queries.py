"""Named queries (``db.query``): read-only, parameterised reports an admin defines per company, and the
``admin.queries.*`` actions that manage them (run by :class:`~forecourt.adapters.named_queries.NamedQueryAdapter`)."""

from __future__ import annotations

from typing import Any

from forecourt.actions.base import Action, Catalogue
from forecourt.actions.common import admin_action
from forecourt.adapters.named_queries.adapter import ADAPTER_ID, NamedQueryAdapter

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_QUERY_ID: dict[str, Any] = {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.-]{0,63}$"}

DB_QUERY_INPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "query_id": {**_QUERY_ID, "description": "Id of a named query your company's admin defined."},
        "params": {
            "type": "object",
            "maxProperties": 20,
            "additionalProperties": {
                "type": ["string", "integer", "number", "boolean", "array", "null"],
                "maxLength": 200,
                "maxItems": 100,
            },
            "description": "Values of the query's declared parameters (they are bound, never spliced into SQL).",
        },
        "dealership_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "The dealership to report on; optional when the credential is bound to exactly one.",
        },
    },
    "required": ["query_id"],
    "additionalProperties": False,
}
DB_QUERY_OUTPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "query_id": {"type": "string"},
        "columns": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "type": {"type": "string"},
                    "currency": {
                        "type": "string",
                        "pattern": "^[A-Z]{3}$",
                        "description": "Money columns only: the ISO 4217 currency of their cells.",
                    },
                },
                "required": ["name", "type"],
            },
        },
        "rows": {
            "type": "array",
            "items": {"type": "object"},
            "description": "One object per row; a money cell is {amount_minor (integer), currency}.",
        },
        "row_count": {"type": "integer", "minimum": 0},
        "truncated": {"type": "boolean"},
        "params": {"type": "object"},
        "window": {"type": ["object", "null"]},
    },
    "required": ["query_id", "columns", "rows", "row_count", "truncated", "params", "window"],
}


def _admin(name: str, description: str, props: dict[str, Any], required: list[str], *, write: bool) -> Action:
    return admin_action(name, description, props, required, write=write, adapter=ADAPTER_ID, tags=("reports",))


NAMED_QUERY_ACTIONS: tuple[Action, ...] = (
    Action(
        name="db.query",
        type="db.query",
        title="Run a named report",
        description=(
            "Run one of your company's named, read-only report queries (e.g. leads_by_source_this_week, "
            "aged_inventory, service_lane_load) for a dealership, with typed parameters. Returns columns and rows; "
            "rows never include customer contact details. Ask an admin to define new queries. Use it for counts and "
            "reports over many records instead of paging through lists."
        ),
        input_schema=DB_QUERY_INPUT,
        output_schema=DB_QUERY_OUTPUT,
        adapter=ADAPTER_ID,
        scope="amcp:reports:read",
        pii=False,
        timeout_s=15.0,
        domain="reports",
        result_type="db.rows",
        tags=("reports",),
        example={"query_id": "aged_inventory"},
    ),
    _admin("admin.queries.list", "List the company's named queries.", {}, [], write=False),
    _admin(
        "admin.queries.upsert",
        "Define or replace a named query (validated and compiled before it is saved).",
        {"query": {"type": "object"}},
        ["query"],
        write=True,
    ),
    _admin("admin.queries.delete", "Delete a named query.", {"query_id": _QUERY_ID}, ["query_id"], write=True),
)


def register_named_queries(catalogue: Catalogue) -> NamedQueryAdapter:
    """Add ``db.query`` and ``admin.queries.*`` and the adapter that runs them to ``catalogue``."""
    for action in NAMED_QUERY_ACTIONS:
        catalogue.add(action)
    adapter = NamedQueryAdapter()
    catalogue.add_adapter(adapter)
    return adapter
