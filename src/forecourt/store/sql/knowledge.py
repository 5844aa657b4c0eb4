"""Knowledge in SQL: documents, chunks, vectors, full-text and vector search, and the embedding cache.

Per backend:

- SQLite: vectors are float32 BLOBs ranked with sqlite-vec's ``vec_distance_cosine`` in SQL (an
  exact scan over the dealership's chunks); full-text is an FTS5 table ranked with ``bm25``. The FTS5
  table is derived data, created and backfilled by the first call that needs it.
- PostgreSQL: vectors are ``real[]``; with the pgvector extension installed they are ranked in SQL
  (``::vector <=>``), otherwise the dealership's vectors are scanned exactly with numpy. Full-text is
  ``to_tsvector``/``ts_rank_cd`` computed over the dealership's chunks.
- Either backend without sqlite-vec or pgvector: numpy exact scan, always limited to one dealership
  and one model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from forecourt.domain.knowledge import ChunkFilter, ChunkRow, from_blob, to_blob
from forecourt.store.sa_postgresql import postgresql
from forecourt.store.sql.context import TxContext
from forecourt.store.sql.knowledge_tables import (
    embedding_cache,
    knowledge_chunks,
    knowledge_documents,
    knowledge_vectors,
)
from forecourt.store.sql.sqlite_vec import ensure_sqlite_vec

if TYPE_CHECKING:  # numpy is imported by the code that handles vectors, not by every process that opens a store
    import numpy as np
    import numpy.typing as npt

FTS_TABLE = "knowledge_fts"
_PGVECTOR_KEY = "forecourt.pgvector"
_FTS_KEY = "forecourt.knowledge_fts"


class PgVector(sa.types.UserDefinedType[str]):
    """pgvector's ``vector`` type, used only in casts (the column itself stays ``real[]``)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"


class SqlKnowledgeRepository:
    """Knowledge rows of one unit of work (:class:`~forecourt.store.base.KnowledgeRepository`)."""

    def __init__(self, ctx: TxContext) -> None:
        self.conn = ctx.conn
        self.is_postgres = ctx.is_postgres

    # ------------------------------------------------------------------ documents

    async def get_document(self, dealership_id: str, document_id: str) -> Mapping[str, Any] | None:
        """The document row, if it belongs to the dealership."""
        stmt = sa.select(knowledge_documents).where(
            knowledge_documents.c.dealership_id == dealership_id, knowledge_documents.c.id == document_id
        )
        row = (await self.conn.execute(stmt)).first()
        return dict(row._mapping) if row else None

    async def list_documents(self, dealership_id: str) -> list[Mapping[str, Any]]:
        """The dealership's documents, by title."""
        stmt = (
            sa.select(knowledge_documents)
            .where(knowledge_documents.c.dealership_id == dealership_id)
            .order_by(knowledge_documents.c.title, knowledge_documents.c.id)
        )
        return [dict(r._mapping) for r in await self.conn.execute(stmt)]

    async def replace_document(self, document: Mapping[str, Any], chunks: Sequence[Mapping[str, Any]]) -> None:
        """Insert or overwrite a document and replace all of its chunks (their vectors go with them)."""
        doc_id = str(document["id"])
        await self._delete_chunks(doc_id)
        exists = (
            await self.conn.execute(sa.select(knowledge_documents.c.id).where(knowledge_documents.c.id == doc_id))
        ).first()
        if exists:
            values = {k: v for k, v in document.items() if k not in ("id", "created_at")}
            await self.conn.execute(
                sa.update(knowledge_documents).where(knowledge_documents.c.id == doc_id).values(**values)
            )
        else:
            await self.conn.execute(sa.insert(knowledge_documents).values(**document))
        if chunks:
            await self.conn.execute(sa.insert(knowledge_chunks), [dict(c) for c in chunks])
            await self._fts_insert(document, chunks)

    async def delete_document(self, dealership_id: str, document_id: str) -> bool:
        """Delete a document with its chunks and vectors; False when it is not there."""
        if await self.get_document(dealership_id, document_id) is None:
            return False
        await self._delete_chunks(document_id)
        await self.conn.execute(sa.delete(knowledge_documents).where(knowledge_documents.c.id == document_id))
        return True

    async def _delete_chunks(self, document_id: str) -> None:
        chunk_ids = sa.select(knowledge_chunks.c.id).where(knowledge_chunks.c.document_id == document_id)
        # Explicit deletes: SQLite enforces ON DELETE CASCADE only with foreign keys on, which a
        # connection opened by another tool may not have.
        await self.conn.execute(sa.delete(knowledge_vectors).where(knowledge_vectors.c.chunk_id.in_(chunk_ids)))
        if not self.is_postgres and await self._fts_ready():
            await self.conn.execute(
                sa.text(f"DELETE FROM {FTS_TABLE} WHERE document_id = :d"),  # noqa: S608 - constant table name
                {"d": document_id},
            )
        await self.conn.execute(sa.delete(knowledge_chunks).where(knowledge_chunks.c.document_id == document_id))

    # ------------------------------------------------------------------ vectors

    async def put_vectors(
        self, dealership_id: str, model: str, rows: Sequence[tuple[str, npt.NDArray[np.float32]]]
    ) -> None:
        """Store one vector per chunk for ``model`` (replacing any previous one)."""
        if not rows:
            return
        ids = [chunk_id for chunk_id, _ in rows]
        await self.conn.execute(
            sa.delete(knowledge_vectors).where(
                knowledge_vectors.c.model == model, knowledge_vectors.c.chunk_id.in_(ids)
            )
        )
        await self.conn.execute(
            sa.insert(knowledge_vectors),
            [
                {
                    "chunk_id": chunk_id,
                    "model": model,
                    "dealership_id": dealership_id,
                    "dimensions": int(vector.shape[0]),
                    "vector": self._vector_value(vector),
                }
                for chunk_id, vector in rows
            ],
        )

    def _vector_value(self, vector: npt.NDArray[np.float32]) -> Any:
        return [float(x) for x in vector] if self.is_postgres else to_blob(vector)

    async def chunks_missing_vectors(self, dealership_id: str, model: str, limit: int) -> list[tuple[str, str, str]]:
        """``(chunk_id, heading, text)`` of the dealership's chunks that have no ``model`` vector yet."""
        has_vector = sa.exists().where(
            knowledge_vectors.c.chunk_id == knowledge_chunks.c.id, knowledge_vectors.c.model == model
        )
        stmt = (
            sa.select(knowledge_chunks.c.id, knowledge_chunks.c.heading, knowledge_chunks.c.text)
            .where(knowledge_chunks.c.dealership_id == dealership_id, ~has_vector)
            .order_by(knowledge_chunks.c.id)
            .limit(limit)
        )
        return [(r.id, r.heading, r.text) for r in await self.conn.execute(stmt)]

    async def vector_search(
        self, dealership_id: str, model: str, query: npt.NDArray[np.float32], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        """``(chunk_id, cosine similarity)`` of the nearest chunks, best first."""
        if not self.is_postgres and await ensure_sqlite_vec(self.conn):
            return await self._sqlite_vec_search(dealership_id, model, query, limit, flt)
        if self.is_postgres and await self._pgvector_ready():
            return await self._pgvector_search(dealership_id, model, query, limit, flt)
        return await self._exact_scan(dealership_id, model, query, limit, flt)

    def _vector_filter(self, dealership_id: str, model: str, flt: ChunkFilter) -> sa.Select[Any]:
        stmt = sa.select(knowledge_vectors.c.chunk_id, knowledge_vectors.c.vector).where(
            knowledge_vectors.c.dealership_id == dealership_id, knowledge_vectors.c.model == model
        )
        if flt.kinds or flt.document_ids:
            stmt = stmt.join(knowledge_chunks, knowledge_chunks.c.id == knowledge_vectors.c.chunk_id)
            stmt = stmt.join(knowledge_documents, knowledge_documents.c.id == knowledge_chunks.c.document_id)
            stmt = stmt.where(*_document_conditions(flt))
        return stmt

    async def _sqlite_vec_search(
        self, dealership_id: str, model: str, query: npt.NDArray[np.float32], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        distance = sa.func.vec_distance_cosine(knowledge_vectors.c.vector, sa.literal(to_blob(query), sa.LargeBinary()))
        base = self._vector_filter(dealership_id, model, flt).with_only_columns(
            knowledge_vectors.c.chunk_id, distance.label("distance")
        )
        stmt = (
            base.where(knowledge_vectors.c.dimensions == int(query.shape[0])).order_by(sa.text("distance")).limit(limit)
        )
        return [(r.chunk_id, 1.0 - float(r.distance)) for r in await self.conn.execute(stmt)]

    async def _pgvector_ready(self) -> bool:
        known = self.conn.info.get(_PGVECTOR_KEY)
        if isinstance(known, bool):
            return known
        found = (await self.conn.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'vector'"))).first()
        self.conn.info[_PGVECTOR_KEY] = found is not None
        return found is not None

    async def _pgvector_search(
        self, dealership_id: str, model: str, query: npt.NDArray[np.float32], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        literal = "[" + ",".join(f"{float(x):.7g}" for x in query) + "]"
        distance = sa.cast(knowledge_vectors.c.vector, PgVector()).op("<=>")(
            sa.cast(sa.literal(literal, sa.String()), PgVector())
        )
        base = self._vector_filter(dealership_id, model, flt).with_only_columns(
            knowledge_vectors.c.chunk_id, distance.label("distance")
        )
        stmt = (
            base.where(knowledge_vectors.c.dimensions == int(query.shape[0])).order_by(sa.text("distance")).limit(limit)
        )
        return [(r.chunk_id, 1.0 - float(r.distance)) for r in await self.conn.execute(stmt)]

    async def _exact_scan(
        self, dealership_id: str, model: str, query: npt.NDArray[np.float32], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        rows = (await self.conn.execute(self._vector_filter(dealership_id, model, flt))).all()
        if not rows:
            return []
        ids = [r.chunk_id for r in rows]
        vectors = [from_blob(r.vector) for r in rows]
        keep = [i for i, v in enumerate(vectors) if v.shape == query.shape]
        if not keep:
            return []
        import numpy as np

        matrix = np.vstack([vectors[i] for i in keep])
        scores = matrix @ query
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(ids[keep[i]], float(scores[i])) for i in order]

    # ------------------------------------------------------------------ full text

    async def text_search(
        self, dealership_id: str, terms: Sequence[str], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        """``(chunk_id, rank score)`` of chunks matching any of ``terms``, best first (higher is better)."""
        terms = list(terms)
        if not terms:
            return []
        if self.is_postgres:
            return await self._pg_text_search(dealership_id, terms, limit, flt)
        return await self._sqlite_text_search(dealership_id, terms, limit, flt)

    async def _sqlite_text_search(
        self, dealership_id: str, terms: list[str], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        await self._ensure_fts()
        match = " OR ".join(f'"{t}"' for t in terms)
        params: dict[str, Any] = {"match": match, "dealer": dealership_id, "limit": limit}
        extra = ""
        if flt.kinds or flt.document_ids:
            params["kinds"] = list(flt.kinds)
            params["docs"] = list(flt.document_ids)
            sub = "SELECT id FROM knowledge_documents WHERE dealership_id = :dealer"
            if flt.kinds:
                sub += " AND kind IN :kinds"
            if flt.document_ids:
                sub += " AND id IN :docs"
            extra = f" AND document_id IN ({sub})"
        # Column weights: title 2, heading 4, body 1 (the three UNINDEXED columns get 0).
        sql = (
            f"SELECT chunk_id, bm25({FTS_TABLE}, 0, 0, 0, 2.0, 4.0, 1.0) AS rank FROM {FTS_TABLE} "  # noqa: S608
            f"WHERE {FTS_TABLE} MATCH :match AND dealership_id = :dealer{extra} ORDER BY rank LIMIT :limit"
        )
        stmt = sa.text(sql)
        if flt.kinds:
            stmt = stmt.bindparams(sa.bindparam("kinds", expanding=True))
        if flt.document_ids:
            stmt = stmt.bindparams(sa.bindparam("docs", expanding=True))
        if not flt.kinds:
            params.pop("kinds", None)
        if not flt.document_ids:
            params.pop("docs", None)
        rows = await self.conn.execute(stmt, params)
        # bm25() is lower-is-better and negative; flip it so that every backend reports higher = better.
        return [(r.chunk_id, -float(r.rank)) for r in rows]

    async def _pg_text_search(
        self, dealership_id: str, terms: list[str], limit: int, flt: ChunkFilter
    ) -> list[tuple[str, float]]:
        c, d = knowledge_chunks, knowledge_documents
        tsquery = sa.func.to_tsquery("english", " | ".join(terms))
        # Heading (the question) weighs most, then the title, then the body; the weights are constants.
        document = (
            sa.func.setweight(sa.func.to_tsvector("english", d.c.title), sa.literal_column("'B'"))
            .op("||")(sa.func.setweight(sa.func.to_tsvector("english", c.c.heading), sa.literal_column("'A'")))
            .op("||")(sa.func.setweight(sa.func.to_tsvector("english", c.c.text), sa.literal_column("'D'")))
        )
        rank = sa.func.ts_rank_cd(document, tsquery).label("rank")
        stmt = (
            sa.select(c.c.id.label("chunk_id"), rank)
            .join(d, d.c.id == c.c.document_id)
            .where(c.c.dealership_id == dealership_id, document.op("@@")(tsquery), *_document_conditions(flt))
            .order_by(sa.desc("rank"), c.c.id)
            .limit(limit)
        )
        return [(r.chunk_id, float(r.rank)) for r in await self.conn.execute(stmt)]

    async def _fts_ready(self) -> bool:
        if self.conn.info.get(_FTS_KEY) is True:
            return True
        found = (
            await self.conn.execute(
                sa.text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :n"), {"n": FTS_TABLE}
            )
        ).first()
        if found is not None:
            self.conn.info[_FTS_KEY] = True
        return found is not None

    async def _ensure_fts(self) -> None:
        if await self._fts_ready():
            return
        await self.conn.execute(
            sa.text(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
                "chunk_id UNINDEXED, dealership_id UNINDEXED, document_id UNINDEXED, title, heading, body, "
                "tokenize = 'porter unicode61')"
            )
        )
        await self.conn.execute(
            sa.text(
                f"INSERT INTO {FTS_TABLE} (chunk_id, dealership_id, document_id, title, heading, body) "  # noqa: S608
                "SELECT c.id, c.dealership_id, c.document_id, d.title, c.heading, c.text "
                "FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id"
            )
        )
        self.conn.info[_FTS_KEY] = True

    async def _fts_insert(self, document: Mapping[str, Any], chunks: Sequence[Mapping[str, Any]]) -> None:
        if self.is_postgres:
            return
        if not await self._fts_ready():
            await self._ensure_fts()  # the backfill has just indexed these chunks too
            return
        await self.conn.execute(
            sa.text(
                f"INSERT INTO {FTS_TABLE} (chunk_id, dealership_id, document_id, title, heading, body) "  # noqa: S608
                "VALUES (:chunk_id, :dealership_id, :document_id, :title, :heading, :body)"
            ),
            [
                {
                    "chunk_id": c["id"],
                    "dealership_id": c["dealership_id"],
                    "document_id": c["document_id"],
                    "title": document["title"],
                    "heading": c["heading"],
                    "body": c["text"],
                }
                for c in chunks
            ],
        )

    # ------------------------------------------------------------------ results

    async def chunk_rows(self, dealership_id: str, chunk_ids: Iterable[str]) -> dict[str, ChunkRow]:
        """Chunks with their documents' fields, by id (only the dealership's own)."""
        ids = list(chunk_ids)
        if not ids:
            return {}
        c, d = knowledge_chunks, knowledge_documents
        stmt = (
            sa.select(
                c.c.id,
                c.c.document_id,
                c.c.ordinal,
                c.c.heading,
                c.c.text,
                d.c.title,
                d.c.kind,
                d.c.source,
                d.c.meta,
                d.c.updated_at,
            )
            .join(d, d.c.id == c.c.document_id)
            .where(c.c.dealership_id == dealership_id, c.c.id.in_(ids))
        )
        return {
            r.id: ChunkRow(
                chunk_id=r.id,
                document_id=r.document_id,
                ordinal=r.ordinal,
                heading=r.heading,
                text=r.text,
                title=r.title,
                kind=r.kind,
                source=r.source,
                meta=dict(r.meta or {}),
                updated_at=r.updated_at,
            )
            for r in await self.conn.execute(stmt)
        }

    # ------------------------------------------------------------------ embedding cache

    async def cached_vectors(
        self, scope: str, model: str, digests: Sequence[str]
    ) -> dict[str, tuple[npt.NDArray[np.float32], int]]:
        """Cached ``(vector, tokens)`` by text digest."""
        if not digests:
            return {}
        stmt = sa.select(embedding_cache.c.text_sha256, embedding_cache.c.vector, embedding_cache.c.tokens).where(
            embedding_cache.c.scope == scope,
            embedding_cache.c.model == model,
            embedding_cache.c.text_sha256.in_(sorted(set(digests))),
        )
        return {r.text_sha256: (from_blob(r.vector), int(r.tokens)) for r in await self.conn.execute(stmt)}

    async def cache_vectors(
        self, scope: str, model: str, rows: Sequence[tuple[str, npt.NDArray[np.float32], int]], now: datetime
    ) -> None:
        """Remember vectors by text digest (existing entries are kept)."""
        if not rows:
            return
        insert = postgresql.insert if self.is_postgres else sqlite.insert
        values = [
            {
                "scope": scope,
                "model": model,
                "text_sha256": digest,
                "dimensions": int(vector.shape[0]),
                "tokens": tokens,
                "vector": self._vector_value(vector),
                "created_at": now,
            }
            for digest, vector, tokens in rows
        ]
        await self.conn.execute(insert(embedding_cache).on_conflict_do_nothing(), values)

    async def prune_cache(self, before: datetime) -> int:
        """Drop cache entries created before ``before``; returns how many."""
        result = await self.conn.execute(sa.delete(embedding_cache).where(embedding_cache.c.created_at < before))
        return int(result.rowcount)


def _document_conditions(flt: ChunkFilter) -> list[sa.ColumnElement[bool]]:
    conditions: list[sa.ColumnElement[bool]] = []
    if flt.kinds:
        conditions.append(knowledge_documents.c.kind.in_(flt.kinds))
    if flt.document_ids:
        conditions.append(knowledge_documents.c.id.in_(flt.document_ids))
    return conditions
