"""What every embedder returns (shared by the embedder modules)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Embedding:
    """Vectors of a batch of texts, and the tokens each text counted."""

    vectors: Vectors
    tokens: list[int]
