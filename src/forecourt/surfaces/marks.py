"""Provenance marks on the wire (gateway/provenance.py): how each front door shows that a result carries
third-party text.

- MCP: the result's ``_meta["forecourt/provenance"]`` holds the mark, and each text content block is delimited as
  data by its own ``_meta["forecourt/untrusted"]`` (``{"id": <the mark's per-result random id>, "sources": [...]}``),
  outside the text, so nothing in the text can end it; the text and ``structuredContent`` are as stored;
- A2A: the ``result`` artifact's ``metadata["forecourt/provenance"]``;
- REST envelope: ``result.metadata.provenance`` (the gateway's own metadata, written as is).
"""

from __future__ import annotations

from typing import Any

from forecourt.gateway.base import Outcome

META_KEY = "forecourt/provenance"


BLOCK_KEY = "forecourt/untrusted"


def _delimited(block: Any, delimiter: str, sources: list[str]) -> Any:
    if not isinstance(block, dict) or block.get("type") != "text":
        return block
    return {**block, "_meta": {**(block.get("_meta") or {}), BLOCK_KEY: {"id": delimiter, "sources": sources}}}


def mcp_result(result: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """A ``CallToolResult`` (wire form) with the outcome's mark, when it has one."""
    mark = outcome.metadata.get("provenance")
    if not isinstance(mark, dict):
        return result
    delimiter, sources = str(mark["delimiter"]), list(mark["sources"])
    content = [_delimited(block, delimiter, sources) for block in result.get("content") or []]
    meta = {**(result.get("_meta") or {}), META_KEY: mark}
    return {**result, "content": content, "_meta": meta}


def a2a_metadata(outcome: Outcome) -> dict[str, Any] | None:
    """An A2A artifact's metadata carrying the outcome's mark, or ``None``."""
    mark = outcome.metadata.get("provenance")
    return {META_KEY: mark} if isinstance(mark, dict) else None


__all__ = ["BLOCK_KEY", "META_KEY", "a2a_metadata", "mcp_result"]
