"""JSON-like values as hashable keys, for memos of work done on a payload (query keys, digests, redactions)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

_SCALARS = frozenset({str, int, float, bool, type(None)})


def frozen(value: Any) -> Hashable | None:
    """``value`` (a JSON-like payload) as a hashable equal only for equal payloads; ``None`` for anything else.

    Lists become tuples tagged apart from objects, objects sorted tuples of pairs; a type is kept with each
    scalar so that ``1``, ``1.0`` and ``True`` stay apart (they would collide as dictionary keys).
    """
    kind = type(value)
    if kind in _SCALARS or isinstance(value, str | int | float | bool):
        return (kind, value)
    if isinstance(value, list | tuple):
        items = [frozen(v) for v in value]
        return None if any(i is None for i in items) else ("[", *items)
    if isinstance(value, Mapping):
        try:
            keys = sorted(value)
        except TypeError:  # keys of several types
            return None
        pairs: list[tuple[str, Hashable]] = []
        for key in keys:
            if type(key) is not str:
                return None
            item = value[key]
            shape = type(item)
            if shape in _SCALARS:  # most values of a payload: no call
                pairs.append((key, (shape, item)))
                continue
            form = frozen(item)
            if form is None:
                return None
            pairs.append((key, form))
        return ("{", *pairs)
    return None
