"""Tool results rendered from a cached output are kept by that output's identity, with their wire encoding."""

from __future__ import annotations

from typing import Any

import orjson

from forecourt.surfaces.mcp.rendered import RenderedResults


def _encode(calls: list[bool]) -> Any:
    def encode(result: dict[str, Any], modern: bool) -> bytes:
        calls.append(modern)
        return orjson.dumps({**result, "era": "modern" if modern else "legacy"})

    return encode


def test_a_rendering_is_reused_only_for_the_very_same_output_and_how_it_was_rendered() -> None:
    rendered = RenderedResults()
    output = {"items": [{"id": "v1"}], "total": 1}
    result = {"content": [{"type": "text", "text": "1 of 1 vehicles."}], "isError": False}
    rendered.keep(output, "inventory.search", "compact", True, result)
    assert rendered.get(output, "inventory.search", "compact", True) is result
    assert rendered.get(dict(output), "inventory.search", "compact", True) is None  # an equal but other object
    assert rendered.get(output, "inventory.search", "full", True) is None
    assert rendered.get(output, "inventory.search", "compact", False) is None


def test_a_kept_renderings_encoding_is_computed_once_per_era_and_others_every_time() -> None:
    rendered = RenderedResults()
    calls: list[bool] = []
    output, result = {"n": 1}, {"isError": False}
    rendered.keep(output, "x", "compact", True, result)
    first = rendered.encoded(result, True, _encode(calls))
    assert rendered.encoded(result, True, _encode(calls)) is first
    assert orjson.loads(rendered.encoded(result, False, _encode(calls)))["era"] == "legacy"
    assert calls == [True, False]
    other = {"isError": False}
    rendered.encoded(other, True, _encode(calls))
    rendered.encoded(other, True, _encode(calls))
    assert calls == [True, False, True, True]


def test_renderings_are_bounded() -> None:
    rendered = RenderedResults(size=1)
    a, b = {"n": 1}, {"n": 2}
    result_a: dict[str, Any] = {"isError": False}
    rendered.keep(a, "x", "compact", True, result_a)
    rendered.keep(b, "x", "compact", True, {"isError": False})
    assert rendered.get(a, "x", "compact", True) is None
    assert rendered.get(b, "x", "compact", True) is not None
    calls: list[bool] = []
    rendered.encoded(result_a, True, _encode(calls))
    rendered.encoded(result_a, True, _encode(calls))
    assert calls == [True, True]  # dropped with its rendering
