"""Tool search for big toolsets: a core set in ``tools/list`` plus ``find_tools(query)``.

When a caller's toolset holds more than ``settings.mcp_tool_search_threshold`` tools (federated upstream
servers can add hundreds), ``tools/list`` offers Forecourt's own tools of the toolset, the tools this caller
has loaded, and ``find_tools``. ``find_tools`` ranks the caller's whole toolset against a query (words in the
name, title and description) and returns the best definitions; with ``load: true`` it adds them to the
caller's listing and the server sends ``notifications/tools/list_changed``.

Loaded tools are remembered per legacy session (``Mcp-Session-Id``), else per member, in this process (a
bounded map): on many replicas a host that lands on another replica may have to load again.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import TYPE_CHECKING

from forecourt import caching

if TYPE_CHECKING:
    import mcp_types as types

FIND_TOOLS = "find_tools"
MAX_KEYS = 10_000
MAX_LOADED = 50
_WORD = re.compile(r"[a-z0-9]+")


@caching.once
def find_tools_tool() -> types.Tool:
    """The ``find_tools`` tool definition (built on first use: a listing of tool names needs no MCP types)."""
    import mcp_types as types

    return types.Tool(
        name=FIND_TOOLS,
        title="Find tools",
        description=(
            "Search the tools available to you that are not listed yet, by what you want to do. Returns the best "
            "matching tool definitions; with load=true they are added to your tool list (you are notified that the "
            'list changed). Use it when no listed tool fits. Example: {"query": "create a github issue", "load": true}'
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "What you want to do."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                "load": {"type": "boolean", "default": False, "description": "Add the matches to your tool list."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )


def __getattr__(name: str) -> types.Tool:
    """``FIND_TOOLS_TOOL``: :func:`find_tools_tool`, for the code that names the constant."""
    if name == "FIND_TOOLS_TOOL":
        return find_tools_tool()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " ").replace(".", " ")))


def rank(query: str, tools: list[types.Tool], limit: int) -> list[types.Tool]:
    """The ``limit`` tools that best match ``query`` (shared words; a name match counts three times)."""
    wanted = _words(query)
    scored: list[tuple[int, str, types.Tool]] = []
    for tool in tools:
        name_words = _words(tool.name)
        text_words = _words(f"{tool.title or ''} {tool.description or ''}")
        score = 3 * len(wanted & name_words) + len(wanted & text_words)
        if score:
            scored.append((-score, tool.name, tool))
    scored.sort(key=lambda s: (s[0], s[1]))
    return [tool for _, _, tool in scored[:limit]]


class LoadedTools:
    """The tools each caller has loaded with ``find_tools`` (bounded, least recently used keys go first)."""

    def __init__(self) -> None:
        self._by_key: OrderedDict[str, list[str]] = OrderedDict()

    def get(self, key: str) -> frozenset[str]:
        """Action names ``key`` has loaded."""
        names = self._by_key.get(key)
        if names is None:
            return frozenset()
        self._by_key.move_to_end(key)
        return frozenset(names)

    def add(self, key: str, action_names: list[str]) -> bool:
        """Add ``action_names`` for ``key``; whether anything new was added."""
        names = self._by_key.setdefault(key, [])
        self._by_key.move_to_end(key)
        added = [n for n in action_names if n not in names]
        names.extend(added)
        del names[: max(0, len(names) - MAX_LOADED)]
        while len(self._by_key) > MAX_KEYS:
            self._by_key.popitem(last=False)
        return bool(added)
