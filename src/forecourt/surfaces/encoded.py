"""JSON bytes of outputs that hold plain JSON values only: a front door splices them into its envelope.

Only plain JSON values are encoded here (objects, arrays, strings, numbers within 64 bits, booleans, null); anything
else is ``None`` and the front door answers through its models, which know how to write it. (A cached output's
encoding used to be kept by the output object's identity; with each hit decoded afresh it could not hit, and it had
saved 0.1-0.2 % of a call: docs/benchmarks.md, "Every cache, and what it earns".)
"""

from __future__ import annotations

from typing import Any

import orjson

_PLAIN = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


def plain_json(value: Any) -> bytes | None:
    """``value`` as compact JSON when it holds plain JSON values only, else ``None``."""
    try:
        return orjson.dumps(value, option=_PLAIN)
    except TypeError:  # orjson.JSONEncodeError: a datetime, a Decimal, a model, an integer past 64 bits...
        return None
