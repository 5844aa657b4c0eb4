"""The AutomotiveMCP front door: Streamable HTTP at ``/mcp`` (both protocol eras, :mod:`.app`) and
``forecourt mcp --stdio``, both serving one :class:`~.server.McpSurface`.

See docs/mcp.md for how to connect hosts, the URI scheme and the tool list.
"""
