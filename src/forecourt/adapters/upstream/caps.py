"""The size cap on upstream tool results: ``FORECOURT_MCP_MAX_RESULT_BYTES``, on every front door.

An upstream tool's result is the upstream's ``CallToolResult`` as JSON (:mod:`.adapter`). One over the cap is
refused here, in the adapter, so the MCP surface (both eras), the A2A door and the REST envelope all answer the
same structured error instead of relaying it whole: ``mcp.result_too_large`` (HTTP 413; an MCP tool error
result), with ``details`` ``{max_bytes, size_bytes}``. The size is that of the result's compact JSON, the form
every door sends on (text, base64 images and audio, embedded resources and ``structuredContent`` together).
A result is refused rather than cut: a cut ``structuredContent`` no longer matches the tool's ``outputSchema``,
and a cut text or image block would be read as whole.
"""

from __future__ import annotations

from typing import Any

import orjson

from forecourt.errors import ResultTooLarge


def result_size(output: Any) -> int:
    """Bytes of ``output`` as compact JSON."""
    return len(orjson.dumps(output))


def check_result_size(output: Any, max_bytes: int) -> None:
    """Refuse a result over ``max_bytes`` (no cap when ``max_bytes`` is not positive).

    Raises:
        ResultTooLarge: ``details`` carry ``max_bytes`` and the result's ``size_bytes``.
    """
    if max_bytes <= 0:
        return
    size = result_size(output)
    if size > max_bytes:
        raise ResultTooLarge(
            "The upstream tool's result is larger than this server passes on; ask it for less.",
            details={"max_bytes": max_bytes, "size_bytes": size},
        )
