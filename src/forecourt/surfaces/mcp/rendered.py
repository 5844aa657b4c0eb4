"""Tool results already rendered for a cached output, so a cache hit skips the projection and the summary.

A cache hit's output is one object shared by every call that hits the same stored result (the gateway keeps it
decoded: ``gateway/stored_results.py``). Rendering it as a tool result (the compact view, the summary, the text
block) gives the same answer each time, so the last renderings are kept, keyed by that object's identity and
how it was rendered; an entry holds its output, so the identity cannot be reused while it is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

RENDERED_RESULTS = 256


class RenderedResults:
    """The last ``size`` tool results rendered from cached outputs."""

    def __init__(self, size: int = RENDERED_RESULTS) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[int, str, str, bool], tuple[Any, dict[str, Any]]] = OrderedDict()

    def get(self, output: Any, action: str, view: str, modern: bool) -> dict[str, Any] | None:
        """A copy of the result rendered for this very ``output`` object, if there is one."""
        key = (id(output), action, view, modern)
        entry = self._entries.get(key)
        if entry is None or entry[0] is not output:
            return None
        self._entries.move_to_end(key)
        return dict(entry[1])  # callers add their era's envelope keys to the copy

    def keep(self, output: Any, action: str, view: str, modern: bool, result: dict[str, Any]) -> None:
        """Remember ``result`` as the rendering of ``output``."""
        key = (id(output), action, view, modern)
        self._entries[key] = (output, dict(result))
        self._entries.move_to_end(key)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
