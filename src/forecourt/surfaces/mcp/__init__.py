"""The AutomotiveMCP front door: Streamable HTTP at ``/mcp`` (both protocol eras) and ``forecourt mcp --stdio``.

See docs/mcp.md for how to connect hosts, the URI scheme and the tool list.
"""

from __future__ import annotations

from forecourt.surfaces.mcp.app import mcp_routes
from forecourt.surfaces.mcp.http import Caller
from forecourt.surfaces.mcp.server import McpSurface

__all__ = ["Caller", "McpSurface", "mcp_routes"]
