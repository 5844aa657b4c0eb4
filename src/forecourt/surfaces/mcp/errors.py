"""Errors of the MCP front door: requests a response cannot carry (results over the cap: ``forecourt.errors``).

Every one derives from :class:`forecourt.errors.ForecourtError`; that module draws the whole tree.
"""

from __future__ import annotations

from forecourt.errors import ForecourtError

# raised in forecourt.surfaces.mcp.backchannel ---


class NoBackChannel(ForecourtError):
    """The response cannot carry a request to the client (not an event stream, or already finished)."""

    code = "mcp.no_back_channel"
