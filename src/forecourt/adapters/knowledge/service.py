"""The knowledge service: cached embeddings, document ingestion and hybrid retrieval over a store.

Embedding cache decision (issue 6 item 4, seed 001 §4 "Caching"): the gateway's result cache is
*not* used for ``embedding.create`` — its key carries the dealership but not the caller's company,
and an embedding's input may be a customer's words. Instead this service keeps its own cache of
vectors keyed by ``(scope, model, sha256(text))`` in the ``embedding_cache`` table, where ``scope``
is the caller's company. A vector is reused only within the company that computed it, the text is
never stored (only its digest), and ingestion, queries and ``embedding.create`` all share it, so an
unchanged chunk or a repeated question is never embedded twice.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from forecourt.adapters.knowledge.chunking import chunk_document, parse_document
from forecourt.adapters.knowledge.embedders import _STOPWORDS, Embedder
from forecourt.adapters.knowledge.lexicon import expansions
from forecourt.domain.knowledge import ChunkFilter, ChunkRow
from forecourt.store.base import Store

if TYPE_CHECKING:  # numpy is imported when vectors are computed, not with the catalogue that names these adapters
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

RRF_K = 60
# Weight of the vector ranking in the fusion, by model (full text weighs 1). Equal weights measured
# best for both embedders on the labelled question set (tests/knowledge/labelled.py).
VECTOR_WEIGHT: dict[str, float] = {}
BACKFILL_LIMIT = 2000
SNIPPET_CHARS = 320
_TERM = re.compile(r"[a-z0-9]+")
_MAX_TERMS = 32


def sha256(text: str) -> str:
    """Hex SHA-256 of UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def query_terms(text: str) -> list[str]:
    """Distinct lower-case alphanumeric terms of a query, stopwords removed, at most 32."""
    seen: list[str] = []
    for term in [*_TERM.findall(text.lower()), *expansions(text)]:
        if term not in _STOPWORDS and term not in seen:
            seen.append(term)
    return seen[:_MAX_TERMS]


@dataclass(frozen=True)
class EmbeddedTexts:
    """Vectors of a batch, with per-text tokens and whether each came from the cache."""

    vectors: npt.NDArray[np.float32]
    tokens: list[int]
    cached: list[bool]
    digests: list[str]


@dataclass(frozen=True)
class DocumentInput:
    """A document to ingest: where it comes from and its Markdown or plain text."""

    source: str
    content: str
    title: str = ""
    kind: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestResult:
    """What ingesting one document did."""

    document_id: str
    source: str
    title: str
    chunks: int
    status: str  # created | updated | unchanged


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk with its fused score and the evidence from each ranking."""

    row: ChunkRow
    score: float
    vector_similarity: float | None
    text_score: float | None


async def embed_cached(
    store: Store, embedder: Embedder, scope: str, texts: Sequence[str], now: datetime
) -> EmbeddedTexts:
    """Embed ``texts``, reusing and filling the ``scope``'s cache (the model runs outside any transaction)."""
    digests = [sha256(t) for t in texts]
    async with store.transaction() as uow:
        found = await uow.knowledge.cached_vectors(scope, embedder.model, digests)
    missing = sorted({d for d in digests if d not in found})
    if missing:
        first = {d: t for t, d in zip(texts, digests, strict=True)}
        computed = await embedder.embed([first[d] for d in missing])
        fresh = [(d, computed.vectors[i], computed.tokens[i]) for i, d in enumerate(missing)]
        async with store.transaction() as uow:
            await uow.knowledge.cache_vectors(scope, embedder.model, fresh, now)
        found.update({d: (v, t) for d, v, t in fresh})
    import numpy as np

    new = set(missing)
    vectors = np.vstack([found[d][0] for d in digests]) if digests else np.zeros((0, embedder.dimensions), np.float32)
    return EmbeddedTexts(
        vectors=vectors.astype(np.float32),
        tokens=[found[d][1] for d in digests],
        cached=[d not in new for d in digests],
        digests=digests,
    )


def document_id_for(dealership_id: str, source: str) -> str:
    """A document's stable id: the same source at the same dealership is the same document."""
    return "doc_" + sha256(f"{dealership_id}\x00{source}")[:24]


async def ingest(
    store: Store,
    dealership_id: str,
    documents: Sequence[DocumentInput],
    *,
    embedder: Embedder | None,
    cache_scope: str,
    now: datetime,
) -> list[IngestResult]:
    """Parse, chunk and store documents for a dealership; unchanged documents are left alone.

    Vectors of ``embedder`` are computed for every chunk that lacks one (through the embedding cache).
    """
    results: list[IngestResult] = []
    for doc in documents:
        results.append(await _ingest_one(store, dealership_id, doc, now))
    if embedder is not None:
        await ensure_vectors(store, dealership_id, embedder, cache_scope=cache_scope, now=now)
    return results


async def _ingest_one(store: Store, dealership_id: str, doc: DocumentInput, now: datetime) -> IngestResult:
    parsed = parse_document(doc.content, default_title=doc.title or doc.source, default_kind=doc.kind or "document")
    title = doc.title or parsed.title
    kind = (doc.kind or parsed.kind).lower()
    meta = {**parsed.meta, **dict(doc.meta)}
    chunks = chunk_document(parsed.body)
    document_id = document_id_for(dealership_id, doc.source)
    digest = sha256(f"{title}\x00{kind}\x00{sorted(meta.items())!r}\x00{parsed.body}")
    async with store.transaction() as uow:
        repo = uow.knowledge
        existing = await repo.get_document(dealership_id, document_id)
        if existing is not None and existing["content_sha256"] == digest:
            return IngestResult(document_id, doc.source, title, int(existing["chunk_count"]), "unchanged")
        row = {
            "id": document_id,
            "dealership_id": dealership_id,
            "source": doc.source,
            "title": title,
            "kind": kind,
            "content_sha256": digest,
            "chunk_count": len(chunks),
            "meta": meta,
            "created_at": existing["created_at"] if existing else now,
            "updated_at": now,
        }
        chunk_rows = [
            {
                "id": "chk_" + sha256(f"{document_id}\x00{c.ordinal}\x00{c.sha256}")[:24],
                "document_id": document_id,
                "dealership_id": dealership_id,
                "ordinal": c.ordinal,
                "heading": c.heading,
                "text": c.text,
                "text_sha256": c.sha256,
            }
            for c in chunks
        ]
        await repo.replace_document(row, chunk_rows)
    return IngestResult(document_id, doc.source, title, len(chunks), "updated" if existing else "created")


async def ensure_vectors(
    store: Store,
    dealership_id: str,
    embedder: Embedder,
    *,
    cache_scope: str,
    now: datetime,
    limit: int = BACKFILL_LIMIT,
) -> int:
    """Embed the dealership's chunks that have no vector of ``embedder``'s model yet; returns how many."""
    async with store.transaction() as uow:
        missing = await uow.knowledge.chunks_missing_vectors(dealership_id, embedder.model, limit)
    if not missing:
        return 0
    texts = [f"{heading}\n{text}" if heading else text for _, heading, text in missing]
    embedded = await embed_cached(store, embedder, cache_scope, texts, now)
    rows = [(chunk_id, embedded.vectors[i]) for i, (chunk_id, _, _) in enumerate(missing)]
    async with store.transaction() as uow:
        await uow.knowledge.put_vectors(dealership_id, embedder.model, rows)
    logger.info("embedded %d knowledge chunks with %s", len(rows), embedder.model)
    return len(rows)


async def retrieve(
    store: Store,
    dealership_id: str,
    query: str,
    *,
    embedder: Embedder | None,
    k: int,
    flt: ChunkFilter,
    mode: str,
    cache_scope: str,
    now: datetime,
) -> list[Hit]:
    """Hybrid retrieval: vector and full-text rankings fused with reciprocal rank fusion.

    ``mode`` is ``hybrid`` (both legs), ``vector`` or ``text``. Without an embedder every mode falls
    back to full text. Each leg contributes ``1 / (60 + rank)``; ties keep document order.
    """
    depth = max(k * 4, 20)
    vector_hits: list[tuple[str, float]] = []
    if embedder is not None and mode in ("hybrid", "vector"):
        await ensure_vectors(store, dealership_id, embedder, cache_scope=cache_scope, now=now)
        qvec = (await embed_cached(store, embedder, cache_scope, [query], now)).vectors[0]
        import numpy as np

        if float(np.linalg.norm(qvec)) > 0:
            async with store.transaction() as uow:
                vector_hits = await uow.knowledge.vector_search(dealership_id, embedder.model, qvec, depth, flt)
    text_hits: list[tuple[str, float]] = []
    if mode in ("hybrid", "text") or embedder is None:
        async with store.transaction() as uow:
            text_hits = await uow.knowledge.text_search(dealership_id, query_terms(query), depth, flt)
    weight = VECTOR_WEIGHT.get(embedder.model, 1.0) if embedder is not None else 1.0
    fused = fuse([vector_hits, text_hits], weights=[weight, 1.0])[:k]
    async with store.transaction() as uow:
        rows = await uow.knowledge.chunk_rows(dealership_id, [cid for cid, _ in fused])
    vec_scores, txt_scores = dict(vector_hits), dict(text_hits)
    return [
        Hit(row=rows[cid], score=score, vector_similarity=vec_scores.get(cid), text_score=txt_scores.get(cid))
        for cid, score in fused
        if cid in rows
    ]


def fuse(
    rankings: Sequence[Sequence[tuple[str, float]]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion of best-first rankings: ``score(d) = Σ w_i / (k + rank_i(d))``."""
    scores: dict[str, float] = {}
    for i, ranking in enumerate(rankings):
        weight = weights[i] if weights is not None else 1.0
        for rank, (item, _) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def snippet(text: str, query: str, limit: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the first query term it contains (whole text when short)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    lowered = flat.lower()
    positions = [lowered.find(t) for t in query.lower().split() if len(t) > 3 and lowered.find(t) >= 0]
    start = max(0, min(positions) - limit // 4) if positions else 0
    start = flat.rfind(" ", 0, start) + 1 if start else 0
    piece = flat[start : start + limit]
    cut = piece.rfind(" ")
    piece = piece[:cut] if cut > limit // 2 else piece
    return ("…" if start else "") + piece + ("…" if start + len(piece) < len(flat) else "")
