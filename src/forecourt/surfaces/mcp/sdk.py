"""The one place Forecourt reaches past the ``mcp`` SDK's public surface.

Low-level handlers get a ``ServerRequestContext`` whose ``session`` proxies one client connection, but unlike the
high-level ``Context`` (``Context.connection``) it does not expose that connection. Subscriptions need it: its
``session_id`` keys them and its ``exit_stack`` ends them with the connection. :func:`connection_of` reads it
(read-only; nothing in the SDK is patched), so an SDK change shows up here and nowhere else.
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.connection import Connection


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The per-client connection behind ``ctx``'s session."""
    connection: Connection = ctx.session._connection
    return connection
