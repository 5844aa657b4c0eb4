"""The vector store behind ``embedding.create``, ``embedding.get``, ``embedding.delete`` and ``knowledge.query
over: vectors`` (seed 001 §8 A: "MCP → Embedding adapter → Vector DB; response: vector ID + similarity scores").

A stored vector belongs to the caller's company and, when the call named one, a dealership. Its id is a
digest of ``(company, dealership, model, sha256(text), source uri)``: storing the same text from the same
source again replaces the record instead of duplicating it, and the id reveals nothing across companies.
Reads, deletes and searches are always limited to the caller's company; a record of a dealership the
caller holds no grant for is treated as absent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from forecourt.adapters.errors import VectorNotFound
from forecourt.contract import ExecutionContext
from forecourt.errors import InvalidParams
from forecourt.store.vectors import VectorRecord, VectorRepository, VectorScope

if TYPE_CHECKING:  # numpy is imported when vectors are computed, not with the catalogue that names these adapters
    import numpy as np
    import numpy.typing as npt


def vector_id(company_id: str, dealership_id: str | None, model: str, text_sha256: str, uri: str) -> str:
    """The stored id of a text's vector."""
    key = "\x1f".join((company_id, dealership_id or "", model, text_sha256, uri))
    return "vec_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def owner_of(ctx: ExecutionContext) -> str:
    """The company whose vector store a call uses.

    Raises:
        InvalidParams: The caller belongs to no company (an operator must act as a company's member).
    """
    if not ctx.company_id:
        raise InvalidParams("The vector store belongs to a company; call as a company member.")
    return ctx.company_id


def _may_read(ctx: ExecutionContext, record: VectorRecord) -> bool:
    if record.dealership_id is None or ctx.principal.method == "internal":
        return True
    return record.dealership_id in ctx.principal.dealership_ids


async def _repository(ctx: ExecutionContext, uow: Any) -> VectorRepository:
    vectors: VectorRepository = uow.vectors
    return vectors


async def store_vectors(
    ctx: ExecutionContext,
    *,
    model: str,
    vectors: npt.NDArray[np.float32],
    digests: Sequence[str],
    tokens: Sequence[int],
    texts: Sequence[str] | None,
    source: Mapping[str, Any],
) -> list[str]:
    """Store one record per vector; returns their ids in order."""
    company_id = owner_of(ctx)
    uri = str(source.get("uri") or "")
    ids: list[str] = []
    async with ctx.store.transaction() as uow:
        repo = await _repository(ctx, uow)
        for i, digest in enumerate(digests):
            record_id = vector_id(company_id, ctx.dealership_id, model, digest, uri)
            await repo.put(
                VectorRecord(
                    id=record_id,
                    company_id=company_id,
                    dealership_id=ctx.dealership_id,
                    model=model,
                    dimensions=int(vectors[i].shape[0]),
                    vector=vectors[i],
                    text_sha256=digest,
                    text=texts[i] if texts is not None else None,
                    tokens=int(tokens[i]),
                    source=dict(source),
                    created_by=ctx.principal.member_id or ctx.principal.subject or ctx.principal.method,
                    created_at=ctx.now,
                )
            )
            ids.append(record_id)
    return ids


async def similar_vectors(
    ctx: ExecutionContext,
    model: str,
    query: npt.NDArray[np.float32],
    k: int,
    *,
    exclude_id: str | None = None,
    with_text: bool = False,
) -> tuple[list[dict[str, Any]], str]:
    """The ``k`` stored vectors of the caller's company (and dealership, when the call has one) most similar
    to ``query``, as ``{id, similarity, dealership_id, source[, text]}``; and the ranking backend's name."""
    company_id = owner_of(ctx)
    scope = VectorScope(company_id=company_id, model=model, dealership_id=ctx.dealership_id, exclude_id=exclude_id)
    async with ctx.store.transaction() as uow:  # the vector SQL needs the async connection
        repo = await _repository(ctx, uow)
        backend = await repo.backend()
        if k <= 0:
            return [], backend
        # Records of dealerships the caller may not read are skipped, so ask for a few more.
        found = await repo.search(scope, query, k * 2 + 5)
        records = await repo.get_many(company_id, [vid for vid, _ in found])
    out: list[dict[str, Any]] = []
    for vid, score in found:
        record = records.get(vid)
        if record is None or not _may_read(ctx, record):
            continue
        item: dict[str, Any] = {
            "id": vid,
            "similarity": round(score, 6),
            "dealership_id": record.dealership_id,
            "source": record.source,
        }
        if with_text:
            item["text"] = record.text
        out.append(item)
        if len(out) == k:
            break
    return out, backend


async def get_vector(ctx: ExecutionContext, vid: str) -> VectorRecord:
    """The caller's company's record ``vid``.

    Raises:
        VectorNotFound: No such record here, or one of a dealership the caller holds no grant for.
    """
    async with ctx.store.transaction() as uow:  # the vector SQL needs the async connection
        record = await (await _repository(ctx, uow)).get(owner_of(ctx), vid)
    if record is None or not _may_read(ctx, record):
        raise VectorNotFound(details={"id": vid})
    return record


async def delete_vector(ctx: ExecutionContext, vid: str) -> None:
    """Delete the caller's company's record ``vid``.

    Raises:
        VectorNotFound: As :func:`get_vector`.
    """
    await get_vector(ctx, vid)
    async with ctx.store.transaction() as uow:
        if not await (await _repository(ctx, uow)).delete(owner_of(ctx), vid):
            raise VectorNotFound(details={"id": vid})


def record_view(record: VectorRecord, *, include_vector: bool) -> dict[str, Any]:
    """A stored vector as ``embedding.get`` answers it."""
    view: dict[str, Any] = {
        "id": record.id,
        "model": record.model,
        "dimensions": record.dimensions,
        "dealership_id": record.dealership_id,
        "source": record.source,
        "text_sha256": record.text_sha256,
        "text": record.text,
        "tokens": record.tokens,
        "created_by": record.created_by,
        "created_at": _iso(record.created_at),
    }
    if include_vector:
        view["embedding"] = [round(float(x), 6) for x in record.vector]
    return view


def _iso(value: datetime) -> str:
    return value.isoformat()
