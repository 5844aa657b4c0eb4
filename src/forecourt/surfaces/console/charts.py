"""Small server-rendered SVG charts (no script, no inline style: CSP-safe)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    """One bar of a chart, in SVG coordinates."""

    x: float
    y: float
    width: float
    height: float
    value: int
    error: int
    error_y: float
    error_height: float


def bars(series: list[int], errors: list[int], *, width: int = 600, height: int = 120) -> tuple[list[Bar], int]:
    """Bars for a per-minute series (errors drawn over calls); returns the bars and the scale's top."""
    top = max([1, *series])
    if not series:
        return [], top
    step = width / len(series)
    out = []
    for i, (value, error) in enumerate(zip(series, errors, strict=False)):
        h = height * value / top
        eh = height * error / top
        out.append(Bar(i * step, height - h, max(step - 1, 1), h, value, error, height - eh, eh))
    return out, top
