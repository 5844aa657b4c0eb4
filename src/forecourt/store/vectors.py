"""The vector store's records and repository interface (implemented in :mod:`forecourt.store.sql.vectors`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True)
class VectorRecord:
    """One stored vector and what is known about it."""

    id: str
    company_id: str
    dealership_id: str | None
    model: str
    dimensions: int
    vector: npt.NDArray[np.float32]
    text_sha256: str
    text: str | None
    tokens: int
    source: dict[str, Any]
    created_by: str
    created_at: datetime


@dataclass(frozen=True)
class VectorScope:
    """Where a search looks: one company's vectors of one model, optionally one dealership's only."""

    company_id: str
    model: str
    dealership_id: str | None = None
    exclude_id: str | None = None


class VectorRepository(Protocol):
    """Stored vectors of ``embedding.create``, always addressed within one company."""

    async def put(self, record: VectorRecord) -> None:
        """Insert ``record`` or replace the company's record with its id."""
        ...

    async def get(self, company_id: str, vector_id: str) -> VectorRecord | None:
        """The company's record ``vector_id``."""
        ...

    async def get_many(self, company_id: str, ids: Sequence[str]) -> dict[str, VectorRecord]:
        """The company's records among ``ids``."""
        ...

    async def delete(self, company_id: str, vector_id: str) -> bool:
        """Delete the company's record; False when there is none."""
        ...

    async def backend(self) -> str:
        """``sqlite-vec``, ``pgvector`` or ``exact-scan``."""
        ...

    async def search(self, scope: VectorScope, query: npt.NDArray[np.float32], limit: int) -> list[tuple[str, float]]:
        """``(id, cosine similarity)`` of the nearest vectors in ``scope``, best first."""
        ...
