"""Knowledge and embeddings (seed 001 §5 "Knowledge / Embedding Adapter", §8 A "Create Embedding").

:class:`KnowledgeAdapter` runs ``embedding.create``, ``knowledge.query``, ``knowledge.search_inventory`` and
``admin.knowledge.*`` (the actions themselves are described in :mod:`forecourt.actions.knowledge`).
"""

from __future__ import annotations

from forecourt.adapters.errors import DocumentNotFound, EmbedderUnavailable, VectorNotFound
from forecourt.adapters.knowledge.adapter import KnowledgeAdapter
from forecourt.adapters.knowledge.embedders import (
    EmbedderRegistry,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    minilm_installed,
)

__all__ = [
    "DocumentNotFound",
    "EmbedderRegistry",
    "EmbedderUnavailable",
    "HashingEmbedder",
    "KnowledgeAdapter",
    "SentenceTransformerEmbedder",
    "VectorNotFound",
    "minilm_installed",
]
