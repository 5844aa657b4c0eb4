"""Errors of the MCP front door: results over the size cap, and requests a response cannot carry.

Every one derives from :class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import ForecourtError

# raised in forecourt.surfaces.mcp.backchannel ---


class NoBackChannel(ForecourtError):
    """The response cannot carry a request to the client (not an event stream, or already finished)."""

    code = "mcp.no_back_channel"


# raised in forecourt.surfaces.mcp.tools ---


class ResultTooLarge(ForecourtError):
    """A tool result exceeds the MCP surface's size cap; ask for a smaller page."""

    code = "mcp.result_too_large"
    http_status = 413
    jsonrpc_code = -32000
    default_message = "The result is too large; ask for a smaller page (limit) or narrower filters."
