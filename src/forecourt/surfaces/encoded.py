"""JSON bytes of outputs, kept for cached ones: a front door splices them into its envelope.

A cache hit's output is one object shared by every call that hits the same stored result
(``gateway/stored_results.py``), so its JSON is the same each time: the last encodings are kept by that object's
identity (an entry holds its output, so the identity is not reused while it is kept). Only plain JSON values are
encoded here (objects, arrays, strings, numbers within 64 bits, booleans, null); anything else is ``None`` and the
front door answers through its models, which know how to write it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson

ENCODED_OUTPUTS = 256
_PLAIN = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


def plain_json(value: Any) -> bytes | None:
    """``value`` as compact JSON when it holds plain JSON values only, else ``None``."""
    try:
        return orjson.dumps(value, option=_PLAIN)
    except TypeError:  # orjson.JSONEncodeError: a datetime, a Decimal, a model, an integer past 64 bits...
        return None


class EncodedOutputs:
    """The plain JSON of the last ``size`` cached outputs encoded."""

    def __init__(self, size: int = ENCODED_OUTPUTS, *, prepare: Callable[[Any], Any] | None = None) -> None:
        self._size = size
        self._prepare = prepare
        self._entries: OrderedDict[int, tuple[Any, bytes | None]] = OrderedDict()

    def of(self, output: Any, *, cached: bool) -> bytes | None:
        """:func:`plain_json` of ``output`` (after ``prepare``), computed once for a cached output object."""
        if not cached:
            return plain_json(self._prepare(output) if self._prepare is not None else output)
        entry = self._entries.get(id(output))
        if entry is not None and entry[0] is output:
            self._entries.move_to_end(id(output))
            return entry[1]
        encoded = plain_json(self._prepare(output) if self._prepare is not None else output)
        self._entries[id(output)] = (output, encoded)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return encoded
