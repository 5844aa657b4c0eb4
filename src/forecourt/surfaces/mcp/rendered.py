"""Tool results already rendered for a cached output, so a cache hit skips the projection and the summary.

A cache hit's output is one object shared by every call that hits the same stored result (the gateway keeps it
decoded: ``gateway/stored_results.py``). Rendering it as a tool result (the compact view, the summary, the text
block) gives the same answer each time, so the last renderings are kept, keyed by that object's identity and
how it was rendered; an entry holds its output, so the identity cannot be reused while it is kept. A kept
rendering is handed out as is (read-only: the direct path builds its era's envelope around it), and its JSON
encoding per era is kept with it, so a hit on the direct path is spliced into the JSON-RPC answer as bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

RENDERED_RESULTS = 256


class RenderedResults:
    """The last ``size`` tool results rendered from cached outputs."""

    def __init__(self, size: int = RENDERED_RESULTS) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[int, str, str, bool], tuple[Any, dict[str, Any]]] = OrderedDict()
        self._encoded: dict[int, tuple[dict[str, Any], dict[bool, bytes]]] = {}

    def get(self, output: Any, action: str, view: str, modern: bool) -> dict[str, Any] | None:
        """The result rendered for this very ``output`` object, if there is one (read-only)."""
        key = (id(output), action, view, modern)
        entry = self._entries.get(key)
        if entry is None or entry[0] is not output:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def keep(self, output: Any, action: str, view: str, modern: bool, result: dict[str, Any]) -> None:
        """Remember ``result`` as the rendering of ``output`` (it is not changed afterwards)."""
        key = (id(output), action, view, modern)
        self._entries[key] = (output, result)
        self._encoded[id(result)] = (result, {})
        self._entries.move_to_end(key)
        if len(self._entries) > self._size:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._encoded.pop(id(dropped), None)

    def encoded(self, result: dict[str, Any], modern: bool, encode: Callable[[dict[str, Any], bool], bytes]) -> bytes:
        """``encode(result, modern)``, computed once per era for a kept rendering."""
        entry = self._encoded.get(id(result))
        if entry is None or entry[0] is not result:
            return encode(result, modern)
        body = entry[1].get(modern)
        if body is None:
            body = entry[1][modern] = encode(result, modern)
        return body
