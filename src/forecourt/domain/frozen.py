"""JSON-like values as hashable keys, for memos of work done on a payload (validation, digests, redactions).

The gateway freezes a call's payload once (``gateway/audit_record.CallState.freeze``) and hands the form to every
memo of the call; :func:`with_entry` updates it for the one key the pipeline sets itself (the dealership resolved).
"""

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


def with_entry(form: Hashable | None, key: str, value: Any) -> Hashable | None:
    """The form :func:`frozen` gives an object frozen as ``form`` once its ``key`` is set to ``value``.

    ``None`` when ``form`` is not an object's form (or ``value`` is not JSON-like).
    """
    item = frozen(value)
    if item is None or not isinstance(form, tuple) or not form or form[0] != "{":
        return None
    pair = (key, item)
    if pair in form:
        return form
    pairs = [p for p in form[1:] if p[0] != key]
    at = next((i for i, p in enumerate(pairs) if p[0] > key), len(pairs))
    pairs.insert(at, pair)
    return ("{", *pairs)
