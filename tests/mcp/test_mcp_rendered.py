"""Tool results rendered from a cached output are kept by that output's identity, and handed out as copies."""

from __future__ import annotations

from forecourt.surfaces.mcp.rendered import RenderedResults


def test_a_rendering_is_reused_only_for_the_very_same_output_and_how_it_was_rendered() -> None:
    rendered = RenderedResults()
    output = {"items": [{"id": "v1"}], "total": 1}
    result = {"content": [{"type": "text", "text": "1 of 1 vehicles."}], "isError": False}
    rendered.keep(output, "inventory.search", "compact", True, result)
    again = rendered.get(output, "inventory.search", "compact", True)
    assert again == result
    assert again is not None
    again["resultType"] = "complete"  # the direct path adds its era's keys to the copy it got
    assert "resultType" not in (rendered.get(output, "inventory.search", "compact", True) or {})
    assert rendered.get(dict(output), "inventory.search", "compact", True) is None  # an equal but other object
    assert rendered.get(output, "inventory.search", "full", True) is None
    assert rendered.get(output, "inventory.search", "compact", False) is None


def test_renderings_are_bounded() -> None:
    rendered = RenderedResults(size=1)
    a, b = {"n": 1}, {"n": 2}
    rendered.keep(a, "x", "compact", True, {"isError": False})
    rendered.keep(b, "x", "compact", True, {"isError": False})
    assert rendered.get(a, "x", "compact", True) is None
    assert rendered.get(b, "x", "compact", True) is not None
