"""What every embedder returns (shared by the embedder modules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:  # numpy is imported when vectors are computed, not with the catalogue that names these adapters
    import numpy as np
    import numpy.typing as npt

Vectors: TypeAlias = "npt.NDArray[np.float32]"


@dataclass(frozen=True)
class Embedding:
    """Vectors of a batch of texts, and the tokens each text counted."""

    vectors: Vectors
    tokens: list[int]
