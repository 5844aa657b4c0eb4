"""Catalogue entries of the knowledge adapter: ``embedding.create``, ``knowledge.query``,
``knowledge.search_inventory`` and the ``admin.knowledge.*`` document actions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from forecourt.actions.base import Action, Catalogue
from forecourt.actions.common import admin_action

if TYPE_CHECKING:
    from forecourt.adapters.knowledge.adapter import KnowledgeAdapter

ADAPTER_ID = "knowledge"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
MAX_INPUTS = 128
MAX_INPUT_CHARS = 8192

_DEALERSHIP_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 128,
    "description": "The dealership (rooftop); optional when the credential is bound to exactly one.",
}
_TEXT: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_INPUT_CHARS}
_SOURCE: dict[str, Any] = {
    "type": "object",
    "description": "Where the chunk comes from: the document's source id, kind, last update and metadata.",
    "properties": {
        "uri": {"type": "string"},
        "kind": {"type": "string"},
        "updated_at": {"type": "string", "format": "date-time"},
        "metadata": {"type": "object"},
    },
    "required": ["uri", "kind", "updated_at", "metadata"],
}
_MATCH: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunk_id": {"type": "string"},
        "document_id": {"type": "string"},
        "title": {"type": "string"},
        "heading": {"type": "string"},
        "similarity": {"type": "number"},
    },
    "required": ["chunk_id", "document_id", "title", "heading", "similarity"],
}

VECTOR_SOURCE: dict[str, Any] = {
    "type": "object",
    "description": "Where the text comes from, kept with the stored vector and returned by searches.",
    "properties": {
        "uri": {"type": "string", "maxLength": 500},
        "kind": {"type": "string", "maxLength": 64},
        "metadata": {"type": "object", "maxProperties": 50},
    },
    "additionalProperties": False,
}
_SIMILAR: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "similarity": {"type": "number"},
        "dealership_id": {"type": ["string", "null"]},
        "source": {"type": "object"},
    },
    "required": ["id", "similarity", "dealership_id", "source"],
}

EMBEDDING_INPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "input": {
            "description": "A text, or a list of texts, to embed.",
            "oneOf": [_TEXT, {"type": "array", "items": _TEXT, "minItems": 1, "maxItems": MAX_INPUTS}],
        },
        "model": {
            "type": "string",
            "maxLength": 200,
            "description": "Embedding model: all-MiniLM-L6-v2-int8 (the default, onnxruntime), forecourt-hash-1024 "
            "(built in, no model) or all-MiniLM-L6-v2 (the sentence-transformers extra). Default: the company's "
            "configured embedder.",
        },
        "params": {
            "type": "object",
            "description": "Model parameters; the built-in embedders take none (ignored).",
        },
        "dealership_id": _DEALERSHIP_ID,
        "store": {
            "type": "boolean",
            "description": "Store the vectors in the company's vector store (default true) and return their ids.",
        },
        "keep_text": {
            "type": "boolean",
            "description": "Keep the text with the stored vector (default false: only its SHA-256 is kept).",
        },
        "source": VECTOR_SOURCE,
        "k": {
            "type": "integer",
            "minimum": 0,
            "maximum": 20,
            "description": "How many most-similar stored vectors of the company (of that dealership with "
            "dealership_id) to return with each vector (default 3); with dealership_id also that many of "
            "the dealership's knowledge chunks, with cosine similarity scores.",
        },
    },
    "required": ["input"],
    "additionalProperties": False,
}
EMBEDDING_OUTPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "model": {"type": "string"},
        "dimensions": {"type": "integer"},
        "data": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "id": {"type": "string", "description": "The stored vector's id (vec_...)."},
                    "stored": {"type": "boolean"},
                    "embedding": {"type": "array", "items": {"type": "number"}},
                    "tokens": {"type": "integer"},
                    "cached": {"type": "boolean"},
                    "similar": {"type": "array", "items": _SIMILAR},
                    "matches": {"type": "array", "items": _MATCH},
                },
                "required": ["index", "id", "stored", "embedding", "tokens", "cached", "similar"],
            },
        },
        "usage": {"type": "object", "properties": {"tokens": {"type": "integer"}}, "required": ["tokens"]},
        "vector_store": {"type": "string", "description": "sqlite-vec, pgvector or exact-scan."},
    },
    "required": ["model", "dimensions", "data", "usage"],
}

QUERY_INPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "The question, in words."},
        "dealership_id": _DEALERSHIP_ID,
        "k": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many chunks (default 5)."},
        "mode": {
            "enum": ["hybrid", "vector", "text"],
            "description": "hybrid (default) fuses vector similarity and full-text ranking; text works without "
            "an embedder.",
        },
        "over": {
            "enum": ["documents", "vectors", "all"],
            "description": "documents (default): the dealership's documents; vectors: the vectors the company "
            "stored for this dealership with embedding.create (returned in `vectors`); all: both.",
        },
        "filters": {
            "type": "object",
            "properties": {
                "kind": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 20},
                "document_id": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 100},
            },
            "additionalProperties": False,
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
QUERY_OUTPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "score": {"type": "number", "description": "Fused score (reciprocal rank fusion), higher first."},
                    "document_id": {"type": "string"},
                    "chunk_id": {"type": "string"},
                    "title": {"type": "string"},
                    "heading": {"type": "string"},
                    "snippet": {"type": "string"},
                    "text": {"type": "string"},
                    "source": _SOURCE,
                    "vector_similarity": {"type": ["number", "null"]},
                    "text_score": {"type": ["number", "null"]},
                },
                "required": ["score", "document_id", "chunk_id", "title", "heading", "snippet", "text", "source"],
            },
        },
        "vectors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {**_SIMILAR["properties"], "text": {"type": ["string", "null"]}},
                "required": [*_SIMILAR["required"], "text"],
            },
        },
        "retrieval": {
            "type": "object",
            "properties": {"mode": {"type": "string"}, "model": {"type": ["string", "null"]}},
            "required": ["mode", "model"],
        },
    },
    "required": ["items", "retrieval"],
}

ASK_INPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 500,
            "description": 'What the buyer wants, in words: "three-row SUV under 40k with low miles".',
        },
        "dealership_id": _DEALERSHIP_ID,
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Vehicles to return (default 10)."},
    },
    "required": ["query"],
    "additionalProperties": False,
}
ASK_OUTPUT: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "filters": {"type": "object", "description": "The inventory.search filters derived from the request."},
        "sort": {"type": ["object", "null"]},
        "interpretation": {"type": "array", "items": {"type": "object"}},
        "ignored": {"type": "array", "items": {"type": "string"}},
        "relaxed": {"type": "array", "items": {"type": "string"}},
        "items": {"type": "array", "items": {"type": "object"}},
        "total": {"type": "integer", "minimum": 0},
    },
    "required": ["filters", "sort", "interpretation", "ignored", "relaxed", "items", "total"],
}

_DOCUMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "source": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Stable id or path."},
        "content": {"type": "string", "minLength": 1, "maxLength": 500_000, "description": "Markdown or text."},
        "title": {"type": "string", "maxLength": 300},
        "kind": {"type": "string", "maxLength": 64, "description": "faq, policy, warranty, ..."},
        "metadata": {"type": "object"},
    },
    "required": ["source", "content"],
    "additionalProperties": False,
}


def _admin(name: str, description: str, props: dict[str, Any], required: list[str], *, write: bool) -> Action:
    return admin_action(
        name,
        description,
        props,
        required,
        write=write,
        adapter=ADAPTER_ID,
        tags=("knowledge",),
        per_dealership=True,
        timeout_s=120.0,
    )


KNOWLEDGE_ACTIONS: tuple[Action, ...] = (
    Action(
        name="embedding.create",
        type="model.invoke",
        also_types=("tool.run",),
        title="Create embeddings",
        description=(
            "Turn a text or a list of texts into unit-length embedding vectors and store them in the company's "
            "vector store with their dealership and source metadata. Returns one vector per input with its stored "
            "id, token counts, whether it came from the embedding cache, and the most similar vectors already "
            "stored, with cosine similarity scores; with dealership_id also the most similar knowledge chunks of "
            "that dealership. Use it to index text for similarity search, or to compare a text with what is already "
            "stored."
        ),
        input_schema=EMBEDDING_INPUT,
        output_schema=EMBEDDING_OUTPUT,
        adapter=ADAPTER_ID,
        scope="amcp:knowledge:write",
        side_effect=True,
        pii=True,
        timeout_s=60.0,
        dealer_scoped=False,
        domain="knowledge",
        result_type="model.embedding",
        tags=("knowledge", "embeddings"),
        example={"input": ["red hybrid SUV"]},
    ),
    Action(
        name="knowledge.query",
        type="tool.run",
        title="Search dealer knowledge",
        description=(
            "Answer-finding over the dealership's own documents (FAQ, policies, warranty terms, service "
            "information): returns the most relevant passages with scores, document and chunk ids, titles and "
            "source metadata. Quote or summarise them; do not promise anything they do not say. Use it for "
            "questions about the dealership's policies, warranty or services, not for finding vehicles."
        ),
        input_schema=QUERY_INPUT,
        output_schema=QUERY_OUTPUT,
        adapter=ADAPTER_ID,
        scope="amcp:knowledge:read",
        pii=False,
        timeout_s=60.0,
        domain="knowledge",
        result_type="knowledge.results",
        tags=("knowledge", "search"),
        example={"query": "What are the service department's Saturday hours?"},
    ),
    Action(
        name="knowledge.search_inventory",
        type="tool.run",
        title="Search inventory in words",
        description=(
            'Search the dealership\'s vehicles with a sentence ("three-row SUV under 40k with low miles"). The '
            "request is mapped onto inventory.search filters (returned as `filters`, with the phrase behind each in "
            "`interpretation`), the matches are ranked, and filters that emptied the result are relaxed and named "
            "in `relaxed`. Prices are minor units; mileage is miles. Use it when the request is a sentence rather "
            "than exact filters."
        ),
        input_schema=ASK_INPUT,
        output_schema=ASK_OUTPUT,
        adapter=ADAPTER_ID,
        scope="amcp:inventory:read",
        pii=False,
        timeout_s=15.0,
        domain="inventory",
        tags=("inventory", "search", "natural-language"),
        example={"query": "family SUV under $35k with low miles"},
    ),
    _admin(
        "admin.knowledge.ingest",
        "Add or replace documents of a dealership (chunked and indexed; unchanged documents are skipped).",
        {"documents": {"type": "array", "items": _DOCUMENT, "minItems": 1, "maxItems": 200}},
        ["documents"],
        write=True,
    ),
    _admin("admin.knowledge.list", "List a dealership's documents.", {}, [], write=False),
    _admin(
        "admin.knowledge.delete",
        "Delete a document of a dealership.",
        {"document_id": {"type": "string", "minLength": 1, "maxLength": 64}},
        ["document_id"],
        write=True,
    ),
)


def register_knowledge(catalogue: Catalogue, adapter: KnowledgeAdapter | None = None) -> KnowledgeAdapter:
    """Add the knowledge actions and the adapter that runs them; makes ``sqlite-vec`` available to SQLite."""
    from forecourt.adapters.knowledge.adapter import KnowledgeAdapter
    from forecourt.store import register_sqlite_vec

    register_sqlite_vec()
    for action in KNOWLEDGE_ACTIONS:
        catalogue.add(action)
    knowledge = adapter or KnowledgeAdapter()
    catalogue.add_adapter(knowledge)
    return knowledge
