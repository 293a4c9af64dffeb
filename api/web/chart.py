"""Charts drawn on the server as SVG: nothing to load, readable without JavaScript, and allowed by
the pages' `default-src 'self'` (an inline <svg> is part of the page).

`series_svg` draws a price series over time: each observation a point (a <circle> carrying its
moment and value, with a tooltip), joined by steps, since a price holds until the next observation
changes it. `band_svg` draws an estimate's band against the usable memory of the cards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

from api.web.money import amount

WIDTH, HEIGHT = 760, 230
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 14, 30


@dataclass(frozen=True)
class Point:
    at: str  # ISO moment, as the answer gives it
    value: float


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    if high == low:
        return [low]
    return [low + (high - low) * i / count for i in range(count + 1)]


def series_svg(points: Sequence[Point], title: str, label: str) -> str:
    """The series as an SVG figure; `title` names it for screen readers, `label` is the value's unit."""
    if not points:
        return ""
    times = [_moment(p.at).timestamp() for p in points]
    values = [p.value for p in points]
    t0, t1 = min(times), max(times)
    v0, v1 = min(values), max(values)
    pad = (v1 - v0) * 0.1 or abs(v1) * 0.1 or 1.0
    v0, v1 = max(0.0, v0 - pad) if v0 >= 0 else v0 - pad, v1 + pad
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + (inner_w * (t - t0) / (t1 - t0) if t1 > t0 else inner_w / 2)

    def y(v: float) -> float:
        return TOP + inner_h * (1 - (v - v0) / (v1 - v0))

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for tick in _ticks(v0, v1):
        parts.append(
            f'<line class="grid-line" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}"/>'
            f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{amount(tick)}</text>'
        )
    first, last = points[0].at, points[-1].at
    parts.append(f'<text x="{LEFT}" y="{HEIGHT - 8}">{escape(first[:10])}</text>')
    if last[:10] != first[:10]:
        parts.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{escape(last[:10])}</text>')
    parts.append(f'<text x="{LEFT}" y="{TOP - 3}">{escape(label)}</text>')
    steps = []
    for index, (t, v) in enumerate(zip(times, values, strict=True)):
        if index:
            steps.append(f"{x(t):.1f},{y(values[index - 1]):.1f}")
        steps.append(f"{x(t):.1f},{y(v):.1f}")
    if len(steps) > 1:
        parts.append(f'<polyline class="line" points="{" ".join(steps)}"/>')
    for point, t in zip(points, times, strict=True):
        parts.append(
            f'<circle class="point" cx="{x(t):.1f}" cy="{y(point.value):.1f}" r="3.5" data-at="{escape(point.at)}" '
            f'data-value="{point.value!r}"><title>{escape(point.at)}: {point.value:g}</title></circle>'
        )
    parts.append("</svg>")
    return "".join(parts)


def band_svg(low: float, point: float, high: float, marks: Sequence[tuple[float, str]], title: str) -> str:
    """An estimate's band (low–high, the point in it) on a GiB scale, with each card's usable memory marked."""
    width, height, left, right = 640, 64, 10, 10
    top = max([high, *(m for m, _ in marks)]) * 1.08 or 1.0

    def x(v: float) -> float:
        return left + (width - left - right) * v / top

    parts = [
        f'<svg class="band" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<rect class="range" x="{x(low):.1f}" y="18" width="{max(1.0, x(high) - x(low)):.1f}" height="18"/>',
        f'<line class="point" x1="{x(point):.1f}" x2="{x(point):.1f}" y1="14" y2="40"/>',
        f'<text x="{x(low):.1f}" y="12" text-anchor="middle">{low:g}</text>',
        f'<text x="{x(high):.1f}" y="12" text-anchor="middle">{high:g}</text>',
    ]
    for value, label in marks:
        parts.append(
            f'<line class="card" x1="{x(value):.1f}" x2="{x(value):.1f}" y1="10" y2="46"/>'
            f'<text x="{x(value):.1f}" y="58" text-anchor="middle">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
