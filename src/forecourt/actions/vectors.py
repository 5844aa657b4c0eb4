"""The vector store's actions: ``embedding.get`` and ``embedding.delete`` (``embedding.create``, which stores, and
``knowledge.query``'s ``over: vectors`` live with the knowledge adapter's actions). The knowledge adapter runs them."""

from __future__ import annotations

from typing import Any

from forecourt.actions.base import Action, Catalogue

ADAPTER_ID = "knowledge"
_ID: dict[str, Any] = {"type": "string", "minLength": 5, "maxLength": 64, "pattern": "^vec_[0-9a-f]+$"}

_GET_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": _ID,
        "include_vector": {"type": "boolean", "description": "Return the vector itself (default true)."},
    },
    "required": ["id"],
    "additionalProperties": False,
}
_DELETE_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"id": _ID},
    "required": ["id"],
    "additionalProperties": False,
}

VECTOR_ACTIONS: tuple[Action, ...] = (
    Action(
        name="embedding.get",
        type="db.query",
        also_types=("tool.run",),
        title="Get a stored vector",
        description=(
            "Fetch a vector stored by embedding.create: model, dimensions, dealership, source metadata, text digest "
            "(the text itself only when it was kept) and, unless include_vector is false, the vector. Use it to "
            "inspect what was stored under an id that embedding.create returned."
        ),
        input_schema=_GET_INPUT,
        output_schema=None,
        adapter=ADAPTER_ID,
        scope="amcp:knowledge:read",
        pii=True,
        dealer_scoped=False,
        domain="knowledge",
        result_type="knowledge.vector",
        tags=("knowledge", "embeddings"),
        example={"id": "vec_0a1b2c3d"},
    ),
    Action(
        name="embedding.delete",
        type="tool.run",
        title="Delete a stored vector",
        description=(
            "Delete a vector stored by embedding.create. Use it to remove text that must no longer be found by "
            "similarity search."
        ),
        input_schema=_DELETE_INPUT,
        output_schema=None,
        adapter=ADAPTER_ID,
        scope="amcp:knowledge:write",
        side_effect=True,
        destructive=True,
        pii=False,
        dealer_scoped=False,
        domain="knowledge",
        result_type="knowledge.vector_deleted",
        tags=("knowledge", "embeddings"),
        example={"id": "vec_0a1b2c3d"},
    ),
)


def register_vector_actions(catalogue: Catalogue) -> None:
    """Add ``embedding.get`` and ``embedding.delete`` (their adapter is the knowledge adapter)."""
    for action in VECTOR_ACTIONS:
        catalogue.add(action)
