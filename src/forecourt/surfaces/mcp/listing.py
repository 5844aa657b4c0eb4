"""What ``tools/list`` offers a caller, computed without the MCP SDK's server.

:class:`~forecourt.surfaces.mcp.server.McpSurface` answers ``tools/list`` and ``find_tools`` with it, and
``forecourt tools list`` runs it on its own: a one-shot command prints a member's listing without importing the
SDK's server and transports (about a third of a second of CPU), and names it without the protocol's types
(:meth:`ToolListing.listed_names`: ``mcp_types``, ~0.1 s, only once a definition is needed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from forecourt.actions.toolsets import NameMode, budgeted, name_mode, offered, upstreams_fit
from forecourt.contract import Action
from forecourt.surfaces.mcp.caller import Caller
from forecourt.surfaces.mcp.discovery import FIND_TOOLS, LoadedTools, find_tools_tool
from forecourt.surfaces.mcp.tokens import list_json
from forecourt.surfaces.mcp.tools import ToolSet, exposed

if TYPE_CHECKING:
    import mcp_types as types

    from forecourt.gateway.pipeline import Gateway
    from forecourt.settings import Settings


class ToolListing:
    """The tools a caller is offered: its effective toolset among the actions the gateway lets it call.

    Args:
        gateway: Decides what the caller may call; holds the catalogue and the company policies.
        settings: The tool-search threshold.
    """

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        self.gateway = gateway
        self.settings = settings
        self.catalogue = gateway.catalogue
        self.toolset = ToolSet(gateway.catalogue)
        self.loaded = LoadedTools()

    async def visible_actions(self, caller: Caller) -> list[Action]:
        """The exposed actions ``caller`` may call (the gateway's own decision)."""
        if caller.principal is None:
            return [a for a in self.catalogue.all() if a.anonymous_allowed and exposed(a)]
        return [a for a in await self.gateway.allowed_actions(caller.principal, None) if exposed(a)]

    def _member_setting(self, caller: Caller, field: str) -> str | None:
        member = caller.principal.member if caller.principal is not None else None
        value = getattr(member, field, None) if member is not None else None
        return value if isinstance(value, str) else None

    def name_mode(self, caller: Caller) -> NameMode:
        """Canonical or LLM-safe names for this caller (``?names=llm``, else the member's setting)."""
        return name_mode(caller.names, self._member_setting(caller, "tool_names"))

    async def offer(self, caller: Caller) -> tuple[list[Action], bool]:
        """The offered actions, and whether the tool budget binds the caller (a role toolset shapes them)."""
        toolset = self._member_setting(caller, "toolset")
        principal = caller.principal
        company = principal.company_id if principal is not None and principal.member is not None else None
        policies = await self.gateway.tenancy.policies(company)
        # Forwarding actions of upstream servers (names with ":") are the gateway's, never tools.
        visible = await self.visible_actions(caller)
        found = [a for a in visible if ":" not in a.name and offered(a, toolset, policies)]
        return found, budgeted(toolset, policies)

    def load_key(self, caller: Caller) -> str:
        """Whose ``find_tools`` loads a listing shows: the session's, else the principal's."""
        principal = caller.principal
        return caller.session_id or (principal.rate_key if principal is not None else "anonymous")

    async def listed_tools(self, caller: Caller) -> list[types.Tool]:
        """The tools ``tools/list`` shows ``caller``: its toolset, or a core set plus ``find_tools`` when big.

        Big: more tools than the threshold, or, for a role toolset, upstream tools that would take the listing past
        the tool budget (``actions/toolsets.py``: 8,000 tokens, upstream tools included).
        """
        shown, find_tools = await self.listed_actions(caller)
        tools = self.toolset.tools(shown, self.name_mode(caller))
        return [*tools, find_tools_tool()] if find_tools else tools

    async def listed_names(self, caller: Caller) -> list[str]:
        """The names of :meth:`listed_tools`, in its order, built without the tool definitions where it can."""
        shown, find_tools = await self.listed_actions(caller)
        mode = self.name_mode(caller)
        names = sorted(self.toolset.name_of(a, mode) for a in shown if exposed(a))
        return [*names, FIND_TOOLS] if find_tools else names

    async def listed_actions(self, caller: Caller) -> tuple[list[Action], bool]:
        """The actions :meth:`listed_tools` shows ``caller``, and whether ``find_tools`` follows them.

        The tool definitions are built only where the budget of a role toolset with upstream tools is weighed.
        """
        offered, bound = await self.offer(caller)
        if len(offered) <= self.settings.mcp_tool_search_threshold:
            upstream = any(a.owner_company_id is not None for a in offered)
            if not (bound and upstream):
                return offered, False
            if upstreams_fit(len(list_json(self.toolset.tools(offered, self.name_mode(caller))).encode())):
                return offered, False
        loaded = self.loaded.get(self.load_key(caller))
        return [a for a in offered if a.owner_company_id is None or a.name in loaded], True
