"""JSON-like values as hashable keys, for memos of work done on a payload (query keys, digests, redactions)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any


def frozen(value: Any) -> Hashable | None:
    """``value`` (a JSON-like payload) as a hashable equal only for equal payloads; ``None`` for anything else.

    Lists become tuples tagged apart from objects, objects sorted tuples of pairs; a type is kept with each
    scalar so that ``1``, ``1.0`` and ``True`` stay apart (they would collide as dictionary keys).
    """
    if isinstance(value, str | int | float | bool) or value is None:
        return (type(value), value)
    if isinstance(value, list | tuple):
        items = [frozen(v) for v in value]
        return None if any(i is None for i in items) else ("[", *items)
    if isinstance(value, Mapping):
        pairs = []
        for key in sorted(value) if all(isinstance(k, str) for k in value) else ():
            item = frozen(value[key])
            if item is None:
                return None
            pairs.append((key, item))
        return ("{", *pairs) if len(pairs) == len(value) else None
    return None
