"""The guard's nesting check: exact at the limit, fooled neither by brackets inside strings nor by malformed text."""

from __future__ import annotations

import pytest

from forecourt.surfaces.guard import json_nesting_within


@pytest.mark.parametrize(
    ("body", "limit", "within"),
    [
        (b'{"a": [1, 2, {"b": 3}]}', 3, True),
        (b'{"a": [1, 2, {"b": 3}]}', 2, False),
        (b"[" * 33 + b"]" * 33, 32, False),
        (b"[" * 32 + b"]" * 32, 32, True),
        (b'{"text": "' + b"[[[[[[[[[[" * 10 + b'"}', 2, True),  # brackets in a string are not nesting
        (b'{"text": "\\"[[[[", "x": [[[]]]}', 4, True),  # an escaped quote does not end the string
        (b'{"text": "\\"[[[[", "x": [[[]]]}', 3, False),
        (b"[" * 40, 32, False),  # malformed: judged by its opening brackets
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}', 32, True),
    ],
)
def test_nesting_is_measured_outside_strings(body: bytes, limit: int, within: bool) -> None:
    assert json_nesting_within(body, limit) is within
