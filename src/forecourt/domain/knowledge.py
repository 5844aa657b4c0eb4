"""Knowledge values shared by the knowledge service and the store: retrieval filters, result rows, vector bytes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported by the code that handles vectors, not by every process that opens a store
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True)
class ChunkFilter:
    """Restricts retrieval to some documents of a dealership."""

    kinds: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChunkRow:
    """A chunk with its document's fields, for results."""

    chunk_id: str
    document_id: str
    ordinal: int
    heading: str
    text: str
    title: str
    kind: str
    source: str
    meta: dict[str, Any]
    updated_at: datetime


def to_blob(vector: npt.NDArray[np.float32]) -> bytes:
    """Little-endian float32 bytes (sqlite-vec's vector layout)."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(data: bytes | Sequence[float]) -> npt.NDArray[np.float32]:
    """A vector from float32 bytes (SQLite) or a float array (PostgreSQL)."""
    import numpy as np

    if isinstance(data, bytes | bytearray | memoryview):
        return np.frombuffer(bytes(data), dtype="<f4").astype(np.float32)
    return np.asarray(list(data), dtype=np.float32)
