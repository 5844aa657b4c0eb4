"""SQL access of the vector store (``vector_records``): put, get, delete and nearest-neighbour search.

Every read and write names the owning company; a search never leaves ``(company, model)`` and, when a
dealership is given, that dealership. Ranking, by backend:

- SQLite: sqlite-vec's ``vec_distance_cosine`` in SQL when the extension is loaded on the connection;
- PostgreSQL with the pgvector extension installed in the database: ``::vector <=>`` in SQL;
- otherwise an exact numpy scan of the company's vectors of that model (read in pages of ``SCAN_PAGE``).

Vectors are unit length, so cosine similarity is ``1 - cosine distance`` and equals the dot product.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from forecourt.store.sa_asyncio import AsyncConnection
from forecourt.store.sql.sqlite_vec import ensure_sqlite_vec
from forecourt.store.sql.vector_tables import vector_records
from forecourt.store.vectors import VectorRecord, VectorScope

if TYPE_CHECKING:  # numpy is imported by the code that handles vectors, not by every process that opens a store
    import numpy as np
    import numpy.typing as npt

SCAN_PAGE = 5000
_PGVECTOR_KEY = "forecourt.pgvector"


class _PgVector(sa.types.UserDefinedType[str]):
    """pgvector's ``vector`` type, used only in casts (the column stays ``real[]``)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"


def _to_blob(vector: npt.NDArray[np.float32]) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def _from_value(data: Any) -> npt.NDArray[np.float32]:
    import numpy as np

    if isinstance(data, bytes | bytearray | memoryview):
        return np.frombuffer(bytes(data), dtype="<f4").astype(np.float32)
    return np.asarray(list(data), dtype=np.float32)


class SqlVectorRepository:
    """Vector records over one SQL connection (SQLite or PostgreSQL)."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    @property
    def is_postgres(self) -> bool:
        """Whether the connection is PostgreSQL's."""
        return self.conn.dialect.name == "postgresql"

    def _value(self, vector: npt.NDArray[np.float32]) -> Any:
        return [float(x) for x in vector] if self.is_postgres else _to_blob(vector)

    async def put(self, record: VectorRecord) -> None:
        """Insert ``record``, or replace the one with its id (the same company's same text and source)."""
        row = {
            "id": record.id,
            "company_id": record.company_id,
            "dealership_id": record.dealership_id,
            "model": record.model,
            "dimensions": record.dimensions,
            "vector": self._value(record.vector),
            "text_sha256": record.text_sha256,
            "text": record.text,
            "tokens": record.tokens,
            "source": record.source,
            "created_by": record.created_by,
            "created_at": record.created_at,
        }
        await self.conn.execute(
            sa.delete(vector_records).where(
                vector_records.c.id == record.id, vector_records.c.company_id == record.company_id
            )
        )
        await self.conn.execute(sa.insert(vector_records).values(**row))

    async def get(self, company_id: str, vector_id: str) -> VectorRecord | None:
        """The company's record ``vector_id`` (``None`` for another company's id as for an unknown one)."""
        stmt = sa.select(vector_records).where(
            vector_records.c.id == vector_id, vector_records.c.company_id == company_id
        )
        row = (await self.conn.execute(stmt)).mappings().first()
        return _record(dict(row)) if row is not None else None

    async def get_many(self, company_id: str, ids: Sequence[str]) -> dict[str, VectorRecord]:
        """The company's records among ``ids``, by id."""
        if not ids:
            return {}
        stmt = sa.select(vector_records).where(
            vector_records.c.company_id == company_id, vector_records.c.id.in_(list(ids))
        )
        return {r["id"]: _record(dict(r)) for r in (await self.conn.execute(stmt)).mappings()}

    async def delete(self, company_id: str, vector_id: str) -> bool:
        """Delete the company's record; False when there is none."""
        result = await self.conn.execute(
            sa.delete(vector_records).where(vector_records.c.id == vector_id, vector_records.c.company_id == company_id)
        )
        return bool(getattr(result, "rowcount", 0))

    async def count(self, company_id: str) -> int:
        """How many vectors the company stores."""
        stmt = sa.select(sa.func.count()).select_from(vector_records).where(vector_records.c.company_id == company_id)
        return int((await self.conn.execute(stmt)).scalar() or 0)

    # ------------------------------------------------------------------ search

    def _where(self, scope: VectorScope, dimensions: int) -> list[sa.ColumnElement[bool]]:
        conditions = [
            vector_records.c.company_id == scope.company_id,
            vector_records.c.model == scope.model,
            vector_records.c.dimensions == dimensions,
        ]
        if scope.dealership_id is not None:
            conditions.append(vector_records.c.dealership_id == scope.dealership_id)
        if scope.exclude_id is not None:
            conditions.append(vector_records.c.id != scope.exclude_id)
        return conditions

    async def backend(self) -> str:
        """``sqlite-vec``, ``pgvector`` or ``exact-scan``: how this connection ranks vectors."""
        if self.is_postgres:
            return "pgvector" if await self._pgvector_ready() else "exact-scan"
        return "sqlite-vec" if await self._sqlite_vec_ready() else "exact-scan"

    async def search(self, scope: VectorScope, query: npt.NDArray[np.float32], limit: int) -> list[tuple[str, float]]:
        """``(vector id, cosine similarity)`` of the nearest vectors in ``scope``, best first."""
        backend = await self.backend()
        if backend == "exact-scan":
            return await self._exact_scan(scope, query, limit)
        distance: sa.ColumnElement[Any]
        if backend == "pgvector":
            literal = "[" + ",".join(f"{float(x):.7g}" for x in query) + "]"
            distance = sa.cast(vector_records.c.vector, _PgVector()).op("<=>")(
                sa.cast(sa.literal(literal, sa.String()), _PgVector())
            )
        else:
            distance = sa.func.vec_distance_cosine(
                vector_records.c.vector, sa.literal(_to_blob(query), sa.LargeBinary())
            )
        stmt = (
            sa.select(vector_records.c.id, distance.label("distance"))
            .where(*self._where(scope, int(query.shape[0])))
            .order_by(sa.text("distance"), vector_records.c.id)
            .limit(limit)
        )
        return [(r.id, 1.0 - float(r.distance)) for r in await self.conn.execute(stmt)]

    async def _exact_scan(
        self, scope: VectorScope, query: npt.NDArray[np.float32], limit: int
    ) -> list[tuple[str, float]]:
        best: list[tuple[str, float]] = []
        after = ""
        while True:
            stmt = (
                sa.select(vector_records.c.id, vector_records.c.vector)
                .where(*self._where(scope, int(query.shape[0])), vector_records.c.id > after)
                .order_by(vector_records.c.id)
                .limit(SCAN_PAGE)
            )
            rows = (await self.conn.execute(stmt)).all()
            if not rows:
                break
            import numpy as np

            matrix = np.vstack([_from_value(r.vector) for r in rows])
            scores = matrix @ query
            best.extend((rows[i].id, float(scores[i])) for i in range(len(rows)))
            best = sorted(best, key=lambda item: (-item[1], item[0]))[:limit]
            after = rows[-1].id
            if len(rows) < SCAN_PAGE:
                break
        return best

    async def _pgvector_ready(self) -> bool:
        known = self.conn.info.get(_PGVECTOR_KEY)
        if isinstance(known, bool):
            return known
        found = (await self.conn.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'vector'"))).first()
        self.conn.info[_PGVECTOR_KEY] = found is not None
        return found is not None

    async def _sqlite_vec_ready(self) -> bool:
        # Loads the extension into this connection where this Python can load extensions (remembered per connection).
        return await ensure_sqlite_vec(self.conn)


def _record(row: Mapping[str, Any]) -> VectorRecord:
    return VectorRecord(
        id=row["id"],
        company_id=row["company_id"],
        dealership_id=row["dealership_id"],
        model=row["model"],
        dimensions=int(row["dimensions"]),
        vector=_from_value(row["vector"]),
        text_sha256=row["text_sha256"],
        text=row["text"],
        tokens=int(row["tokens"]),
        source=dict(row["source"] or {}),
        created_by=row["created_by"],
        created_at=row["created_at"],
    )
