"""The text block of a tool result: compact JSON, the same whatever the values' Python types."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from forecourt.surfaces.mcp.tools import dumps


@pytest.mark.parametrize(
    "value",
    [
        {"items": [{"vin": "1HGCM82633A004352", "price": {"amount_minor": 2_450_000, "currency": "USD"}}], "total": 1},
        {"name": "Škoda Octavia — 2 200 €", "emoji": "🚗", "nested": {"list": [1, 2.5, None, True]}},
        {"huge": 10**30},
        {"at": datetime(2026, 11, 21, 9, 30, tzinfo=UTC)},
        {1: "int key"},
    ],
)
def test_tool_text_is_what_the_standard_library_would_write(value: Any) -> None:
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    assert json.loads(dumps(value)) == json.loads(expected)


def test_tool_text_is_compact_and_keeps_non_ascii_characters() -> None:
    assert dumps({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'
