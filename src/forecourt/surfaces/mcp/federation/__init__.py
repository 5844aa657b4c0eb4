"""MCP federation: the MCP front door's side of a company's upstream MCP servers (:mod:`.handlers`, :mod:`.relay`)."""
