"""Numbers every store can hold: payload integers and floats are bounded to the signed 64-bit range.

JSON allows integers of any size, and an input schema without a ``maximum`` lets one through to the
database driver, which then fails with an overflow (SQLite: ``OverflowError``; PostgreSQL: a data
error) — a 500 for what is the caller's mistake. The gateway checks every payload once, before any
adapter runs, and refuses out-of-range numbers as ``invalid_params`` (without quoting the value).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forecourt.errors import InvalidParams

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def _out_of_range(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return not INT64_MIN <= value <= INT64_MAX
    return False


def first_out_of_range(payload: Any) -> str | None:
    """The JSON pointer of the first number outside the signed 64-bit range, or ``None`` (iterative)."""
    stack: list[tuple[Any, str]] = [(payload, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, Mapping):
            stack.extend((v, f"{path}/{str(k)[:64]}") for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{path}/{i}") for i, v in enumerate(item))
        elif _out_of_range(item):
            return path or "/"
    return None


def _all_in_range(payload: Any) -> bool:
    """Whether every number in ``payload`` is in range: :func:`first_out_of_range` without building paths."""
    stack: list[Any] = [payload]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int or kind is float:
            if not INT64_MIN <= item <= INT64_MAX:
                return False
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif _out_of_range(item):
            return False
    return True


def check_number_bounds(payload: Any) -> None:
    """Refuse a payload holding a number no store column can hold.

    Raises:
        InvalidParams: With ``details.errors = [{"path": ..., "rule": "range"}]``.
    """
    if _all_in_range(payload):
        return
    path = first_out_of_range(payload)
    if path is not None:
        raise InvalidParams(
            "A number is outside the supported range.",
            details={"errors": [{"path": path, "rule": "range", "limit": INT64_MAX}]},
        )
