"""Provenance marks on the wire (gateway/provenance.py): how each front door shows that a result carries
third-party text.

- MCP: the result's ``_meta["forecourt/provenance"]`` holds the mark, and each text content block is wrapped in
  ``<untrusted-data id="..." source="...">`` ... ``</untrusted-data id="...">`` with the mark's per-result random id
  (so the text cannot close the wrapper); ``structuredContent`` is the data as stored;
- A2A: the ``result`` artifact's ``metadata["forecourt/provenance"]``;
- REST envelope: ``result.metadata.provenance`` (the gateway's own metadata, written as is).
"""

from __future__ import annotations

from typing import Any

from forecourt.gateway.base import Outcome

META_KEY = "forecourt/provenance"


def _wrapped(block: Any, delimiter: str, sources: str) -> Any:
    if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
        return block
    text = block["text"]
    return {
        **block,
        "text": f'<untrusted-data id="{delimiter}" source="{sources}">\n{text}\n</untrusted-data id="{delimiter}">',
    }


def mcp_result(result: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """A ``CallToolResult`` (wire form) with the outcome's mark, when it has one."""
    mark = outcome.metadata.get("provenance")
    if not isinstance(mark, dict):
        return result
    delimiter, sources = str(mark["delimiter"]), ",".join(mark["sources"])
    content = [_wrapped(block, delimiter, sources) for block in result.get("content") or []]
    meta = {**(result.get("_meta") or {}), META_KEY: mark}
    return {**result, "content": content, "_meta": meta}


def a2a_metadata(outcome: Outcome) -> dict[str, Any] | None:
    """An A2A artifact's metadata carrying the outcome's mark, or ``None``."""
    mark = outcome.metadata.get("provenance")
    return {META_KEY: mark} if isinstance(mark, dict) else None


__all__ = ["META_KEY", "a2a_metadata", "mcp_result"]
