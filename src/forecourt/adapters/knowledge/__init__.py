"""Knowledge and embeddings (seed 001 §5 "Knowledge / Embedding Adapter", §8 A "Create Embedding").

``register_knowledge(catalogue)`` adds ``embedding.create``, ``knowledge.query``,
``knowledge.search_inventory`` and ``admin.knowledge.*`` with the :class:`KnowledgeAdapter` that runs
them, and makes ``sqlite-vec`` available to SQLite connections opened afterwards.
"""

from __future__ import annotations

from forecourt.actions.base import Catalogue
from forecourt.adapters.knowledge.actions import ADAPTER_ID, KNOWLEDGE_ACTIONS
from forecourt.adapters.knowledge.adapter import DocumentNotFound, KnowledgeAdapter
from forecourt.adapters.knowledge.embedders import (
    EmbedderRegistry,
    EmbedderUnavailable,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    minilm_installed,
)
from forecourt.adapters.knowledge.sqlite_vec import register_auto_extension

__all__ = [
    "ADAPTER_ID",
    "KNOWLEDGE_ACTIONS",
    "DocumentNotFound",
    "EmbedderRegistry",
    "EmbedderUnavailable",
    "HashingEmbedder",
    "KnowledgeAdapter",
    "SentenceTransformerEmbedder",
    "minilm_installed",
    "register_knowledge",
]


def register_knowledge(catalogue: Catalogue, adapter: KnowledgeAdapter | None = None) -> KnowledgeAdapter:
    """Add the knowledge actions and their adapter to ``catalogue``; returns the adapter."""
    register_auto_extension()
    for action in KNOWLEDGE_ACTIONS:
        catalogue.add(action)
    knowledge = adapter or KnowledgeAdapter()
    catalogue.add_adapter(knowledge)
    return knowledge
