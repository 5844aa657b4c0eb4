"""The ``knowledge`` adapter (seed 001 §5 "Knowledge / Embedding Adapter").

Runs ``embedding.create``, ``knowledge.query``, ``knowledge.search_inventory`` and the
``admin.knowledge.*`` actions. Adapter configuration (``settings/adapters/knowledge``):

- ``embedder``: ``auto`` (default: all-MiniLM-L6-v2 int8 on onnxruntime, else the sentence-transformers
  extra, else hashing), ``minilm``, ``minilm-onnx``, ``minilm-fp32``, ``hashing`` (built in, no model) or
  ``none`` (full-text retrieval only).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from forecourt.adapters.errors import DocumentNotFound
from forecourt.adapters.knowledge.embedders import Embedder, EmbedderRegistry
from forecourt.adapters.knowledge.inventory_nl import InventoryIntent, Vocabulary, parse_inventory_request
from forecourt.adapters.knowledge.service import (
    DocumentInput,
    Hit,
    embed_cached,
    ingest,
    retrieve,
    snippet,
)
from forecourt.adapters.knowledge.vector_store import (
    delete_vector,
    get_vector,
    record_view,
    similar_vectors,
    store_vectors,
)
from forecourt.contract import AdapterResult, ExecutionContext
from forecourt.domain.knowledge import ChunkFilter
from forecourt.errors import Forbidden, ForecourtError, InvalidParams, TenancyDenied, UnknownAction

logger = logging.getLogger(__name__)

Handler = Callable[[Mapping[str, Any], ExecutionContext], Awaitable[AdapterResult]]
CANDIDATES = 50


def cache_scope(ctx: ExecutionContext) -> str:
    """Whose embedding cache a call uses: the caller's company (``-`` for an operator without one)."""
    return ctx.company_id or "-"


def _require_dealership(ctx: ExecutionContext) -> str:
    if not ctx.dealership_id:
        raise InvalidParams("dealership_id is required.", details={"field": "dealership_id"})
    return ctx.dealership_id


def _may_read_dealership(ctx: ExecutionContext, dealership_id: str) -> None:
    """Tenancy check for the optional dealership of a non-dealer-scoped action (embedding.create)."""
    principal = ctx.principal
    if principal.method == "internal":
        return
    if dealership_id not in principal.dealership_ids:
        raise TenancyDenied()


class KnowledgeAdapter:
    """Embeddings, dealer-document retrieval and natural-language inventory search."""

    id = "knowledge"

    def __init__(self, embedders: EmbedderRegistry | None = None, *, default_embedder: str = "auto") -> None:
        self.embedders = embedders or EmbedderRegistry()
        self.default_embedder = default_embedder
        self._handlers: dict[str, Handler] = {
            "embedding.create": self._embedding_create,
            "embedding.get": self._embedding_get,
            "embedding.delete": self._embedding_delete,
            "knowledge.query": self._knowledge_query,
            "knowledge.search_inventory": self._search_inventory,
            "admin.knowledge.ingest": self._admin_ingest,
            "admin.knowledge.list": self._admin_list,
            "admin.knowledge.delete": self._admin_delete,
        }

    async def execute(self, payload: Mapping[str, Any], context: ExecutionContext) -> AdapterResult:
        """Run the handler of ``context.action``."""
        handler = self._handlers.get(context.action.name)
        if handler is None:
            raise UnknownAction(details={"action": context.action.name})
        return await handler(payload, context)

    def embedder_for(self, ctx: ExecutionContext) -> Embedder | None:
        """The embedder the company's configuration selects (``None``: full text only)."""
        name = ctx.adapter_config.get("embedder", self.default_embedder)
        return self.embedders.configured(str(name) if name is not None else None)

    # ------------------------------------------------------------------ embedding.create

    async def _embedding_create(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        raw = payload["input"]
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        model = payload.get("model")
        embedder = self.embedders.by_model(str(model)) if model else self.embedder_for(ctx) or self.embedders.hashing
        k = int(payload.get("k", 3))
        store = bool(payload.get("store", True))
        if ctx.dealership_id:
            _may_read_dealership(ctx, ctx.dealership_id)
        embedded = await embed_cached(ctx.store, embedder, cache_scope(ctx), texts, ctx.now)
        ids = [f"vec_{d[:32]}" for d in embedded.digests]
        if store:
            ids = await store_vectors(
                ctx,
                model=embedder.model,
                vectors=embedded.vectors,
                digests=embedded.digests,
                tokens=embedded.tokens,
                texts=texts if payload.get("keep_text") else None,
                source=payload.get("source") or {},
            )
        data: list[dict[str, Any]] = []
        backend = "-"
        for i in range(len(texts)):
            similar, backend = await similar_vectors(
                ctx, embedder.model, embedded.vectors[i], k, exclude_id=ids[i] if store else None
            )
            item: dict[str, Any] = {
                "index": i,
                "id": ids[i],
                "stored": store,
                "embedding": [round(float(x), 6) for x in embedded.vectors[i]],
                "tokens": embedded.tokens[i],
                "cached": embedded.cached[i],
                "similar": similar,
            }
            if k > 0 and ctx.dealership_id:
                item["matches"] = await self._matches(ctx, ctx.dealership_id, embedder, embedded.vectors[i], k)
            data.append(item)
        tokens = sum(embedded.tokens)
        output = {
            "model": embedder.model,
            "dimensions": embedder.dimensions,
            "data": data,
            "usage": {"tokens": tokens},
            "vector_store": backend,
        }
        metadata = {
            "model": embedder.model,
            "dimensions": embedder.dimensions,
            "tokens": tokens,
            "cached": sum(embedded.cached),
            "stored": len(ids) if store else 0,
        }
        return AdapterResult(output=output, result_type="model.embedding", metadata=metadata)

    async def _embedding_get(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        record = await get_vector(ctx, str(payload["id"]))
        view = record_view(record, include_vector=bool(payload.get("include_vector", True)))
        return AdapterResult(output=view, result_type="knowledge.vector", metadata={"model": record.model})

    async def _embedding_delete(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        await delete_vector(ctx, str(payload["id"]))
        return AdapterResult(output={"id": payload["id"], "deleted": True}, result_type="knowledge.vector_deleted")

    async def _query_vectors(self, query: str, k: int, ctx: ExecutionContext) -> tuple[list[dict[str, Any]], str]:
        embedder = self.embedder_for(ctx) or self.embedders.hashing
        embedded = await embed_cached(ctx.store, embedder, cache_scope(ctx), [query], ctx.now)
        found, _backend = await similar_vectors(ctx, embedder.model, embedded.vectors[0], k, with_text=True)
        return found, embedder.model

    async def _matches(
        self, ctx: ExecutionContext, dealership_id: str, embedder: Embedder, vector: Any, k: int
    ) -> list[dict[str, Any]]:
        from forecourt.adapters.knowledge.service import ensure_vectors

        await ensure_vectors(ctx.store, dealership_id, embedder, cache_scope=cache_scope(ctx), now=ctx.now)
        async with ctx.store.transaction() as uow:
            found = await uow.knowledge.vector_search(dealership_id, embedder.model, vector, k, ChunkFilter())
            rows = await uow.knowledge.chunk_rows(dealership_id, [cid for cid, _ in found])
        return [
            {
                "chunk_id": cid,
                "document_id": rows[cid].document_id,
                "title": rows[cid].title,
                "heading": rows[cid].heading,
                "similarity": round(score, 6),
            }
            for cid, score in found
            if cid in rows
        ]

    # ------------------------------------------------------------------ knowledge.query

    async def _knowledge_query(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        dealership_id = _require_dealership(ctx)
        query = str(payload["query"])
        k = int(payload.get("k", 5))
        over = str(payload.get("over", "documents"))
        output: dict[str, Any] = {"items": [], "retrieval": {"mode": "vector", "model": None}}
        if over in ("documents", "all"):
            output = await self._query_documents(payload, ctx, dealership_id, query, k)
        if over in ("vectors", "all"):
            output["vectors"], model = await self._query_vectors(query, k, ctx)
            output["retrieval"]["model"] = output["retrieval"]["model"] or model
        metadata = {"total": len(output["items"]) + len(output.get("vectors", [])), **output["retrieval"]}
        return AdapterResult(output=output, result_type="knowledge.results", metadata=metadata)

    async def _query_documents(
        self, payload: Mapping[str, Any], ctx: ExecutionContext, dealership_id: str, query: str, k: int
    ) -> dict[str, Any]:
        mode = str(payload.get("mode", "hybrid"))
        filters = payload.get("filters") or {}
        flt = ChunkFilter(
            kinds=tuple(str(v).lower() for v in filters.get("kind") or ()),
            document_ids=tuple(str(v) for v in filters.get("document_id") or ()),
        )
        embedder = self.embedder_for(ctx)
        hits = await retrieve(
            ctx.store,
            dealership_id,
            query,
            embedder=embedder,
            k=k,
            flt=flt,
            mode=mode,
            cache_scope=cache_scope(ctx),
            now=ctx.now,
        )
        used_mode = mode if embedder is not None else "text"
        return {
            "items": [_hit_view(h, query) for h in hits],
            "retrieval": {"mode": used_mode, "model": embedder.model if embedder is not None else None},
        }

    # ------------------------------------------------------------------ knowledge.search_inventory

    async def _search_inventory(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        dealership_id = _require_dealership(ctx)
        if ctx.invoke is None:
            raise InvalidParams("This action needs the gateway.")
        limit = int(payload.get("limit", 10))
        vocabulary = await self._vocabulary(ctx, dealership_id)
        intent = parse_inventory_request(str(payload["query"]), vocabulary)
        found, relaxed = await self._search_relaxing(ctx, dealership_id, intent)
        ranked = rank_vehicles(found["items"], intent)
        if intent.sort is None:
            found_items = ranked
        else:
            order = {id(v): s for v, s in ranked}
            found_items = [(v, order[id(v)]) for v in found["items"]]
        items = [{**vehicle, "score": round(score, 4)} for vehicle, score in found_items[:limit]]
        output = {
            "filters": intent.filters,
            "sort": intent.sort,
            "interpretation": intent.interpretation,
            "ignored": intent.ignored,
            "relaxed": relaxed,
            "items": items,
            "total": int(found.get("total", len(found["items"]))),
        }
        return AdapterResult(output=output, metadata={"total": output["total"]})

    async def _vocabulary(self, ctx: ExecutionContext, dealership_id: str) -> Vocabulary:
        assert ctx.invoke is not None
        try:
            facets = await ctx.invoke("inventory.facets", {"dealership_id": dealership_id})
        except ForecourtError as exc:
            # Without facets (e.g. a caller not allowed to call them) the built-in vocabulary still works.
            logger.info("inventory.facets unavailable for search_inventory: %s", exc.code)
            return Vocabulary()
        return Vocabulary.from_facets(facets if isinstance(facets, Mapping) else {})

    async def _search_relaxing(
        self, ctx: ExecutionContext, dealership_id: str, intent: InventoryIntent
    ) -> tuple[dict[str, Any], list[str]]:
        assert ctx.invoke is not None
        filters = dict(intent.filters)
        relaxed: list[str] = []
        while True:
            body: dict[str, Any] = {"dealership_id": dealership_id, **filters, "limit": CANDIDATES}
            if intent.sort is not None:
                body["sort"] = intent.sort
            found = await ctx.invoke("inventory.search", body)
            result = dict(found) if isinstance(found, Mapping) else {"items": [], "total": 0}
            if result.get("items") or not any(k in filters for k in intent.soft):
                return result, relaxed
            dropped = next(k for k in intent.soft if k in filters)
            filters.pop(dropped)
            relaxed.append(dropped)

    # ------------------------------------------------------------------ admin.knowledge.*

    async def _admin_dealership(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> str:
        company_id = str(payload["company_id"])
        principal = ctx.principal
        if principal.method != "internal":
            member = principal.member
            if member is None or not member.is_admin or principal.company_id != company_id:
                raise Forbidden("Only the company's administrators may do this.")
        dealership_id = str(payload["dealership_id"])
        async with ctx.store.transaction() as uow:
            dealership = await uow.tenancy.get_dealership(dealership_id)
        if dealership is None or dealership.company_id != company_id:
            raise TenancyDenied()
        return dealership_id

    async def _admin_ingest(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        dealership_id = await self._admin_dealership(payload, ctx)
        documents = [
            DocumentInput(
                source=str(d["source"]),
                content=str(d["content"]),
                title=str(d.get("title") or ""),
                kind=str(d.get("kind") or ""),
                meta=dict(d.get("metadata") or {}),
            )
            for d in payload["documents"]
        ]
        results = await ingest(
            ctx.store,
            dealership_id,
            documents,
            embedder=self.embedder_for(ctx),
            cache_scope=str(payload["company_id"]),
            now=ctx.now,
        )
        items = [
            {"document_id": r.document_id, "source": r.source, "title": r.title, "chunks": r.chunks, "status": r.status}
            for r in results
        ]
        return AdapterResult(output={"items": items}, result_type="admin.result")

    async def _admin_list(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        dealership_id = await self._admin_dealership(payload, ctx)
        async with ctx.store.transaction() as uow:
            rows = await uow.knowledge.list_documents(dealership_id)
        items = [
            {
                "document_id": r["id"],
                "source": r["source"],
                "title": r["title"],
                "kind": r["kind"],
                "chunks": r["chunk_count"],
                "metadata": r["meta"],
                "updated_at": r["updated_at"].isoformat(),
            }
            for r in rows
        ]
        return AdapterResult(output={"items": items}, result_type="admin.result")

    async def _admin_delete(self, payload: Mapping[str, Any], ctx: ExecutionContext) -> AdapterResult:
        dealership_id = await self._admin_dealership(payload, ctx)
        async with ctx.store.transaction() as uow:
            deleted = await uow.knowledge.delete_document(dealership_id, str(payload["document_id"]))
        if not deleted:
            raise DocumentNotFound()
        return AdapterResult(output={"deleted": True}, result_type="admin.result")


def _hit_view(hit: Hit, query: str) -> dict[str, Any]:
    row = hit.row
    return {
        "score": round(hit.score, 6),
        "document_id": row.document_id,
        "chunk_id": row.chunk_id,
        "title": row.title,
        "heading": row.heading,
        "snippet": snippet(row.text, query),
        "text": row.text,
        "source": {"uri": row.source, "kind": row.kind, "updated_at": row.updated_at.isoformat(), "metadata": row.meta},
        "vector_similarity": None if hit.vector_similarity is None else round(hit.vector_similarity, 6),
        "text_score": None if hit.text_score is None else round(hit.text_score, 6),
    }


def rank_vehicles(items: list[dict[str, Any]], intent: InventoryIntent) -> list[tuple[dict[str, Any], float]]:
    """Candidates ordered by a weighted blend of low price, low mileage and recent year, each scaled 0..1.

    The weights come from the request ("low miles" doubles mileage, "cheap" doubles price, "newer"
    doubles year); the result is normalised to 0..1.
    """
    if not items:
        return []

    def spread(values: list[float]) -> tuple[float, float]:
        low, high = min(values), max(values)
        return low, (high - low) or 1.0

    prices = [float(v.get("price", {}).get("amount_minor", 0)) for v in items]
    miles = [float(v.get("mileage", {}).get("value", 0)) for v in items]
    years = [float(v.get("year", 0)) for v in items]
    (p0, ps), (m0, ms), (y0, ys) = spread(prices), spread(miles), spread(years)
    w = intent.weights
    total_weight = w["price"] + w["mileage"] + w["year"]
    scored = []
    for vehicle, price, mileage, year in zip(items, prices, miles, years, strict=True):
        score = (
            w["price"] * (1 - (price - p0) / ps)
            + w["mileage"] * (1 - (mileage - m0) / ms)
            + w["year"] * ((year - y0) / ys)
        ) / total_weight
        scored.append((vehicle, score))
    return sorted(scored, key=lambda vs: -vs[1])
