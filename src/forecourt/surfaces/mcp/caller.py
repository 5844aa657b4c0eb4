"""Who is calling over MCP (a plain value: nothing of the SDK or of HTTP, so a listing can be computed without them)."""

from __future__ import annotations

from dataclasses import dataclass

from forecourt.gateway.base import Credentials, Principal, Surface


@dataclass(frozen=True)
class Caller:
    """Who is calling over MCP: a verified principal, or an anonymous caller of a public dealer agent."""

    principal: Principal | None
    credentials: Credentials
    surface: Surface = "mcp"
    session_id: str | None = None
    names: str | None = None
    """``?names=`` of the endpoint URL (``llm``: LLM-safe tool names)."""

    @property
    def anonymous(self) -> bool:
        """Whether no credential was presented."""
        return self.principal is None
