"""The log-log roofline chart as SVG geometry: axes with decade ticks, each file's roofs (the
DRAM bandwidth slope and one flat roof per FLOP family its kernels used, from the cards' own
peak figures) and a marker per kernel. Pure numbers and shapes; the template draws them.

No L2 slope: the x axis is FLOP per DRAM byte, and a kernel's L2 roof depends on its own L2
intensity, which is not that axis (a slope drawn there would sit at a different place for each
kernel); each card's binding roof, L2 included, is in its tooltip and the cards table. With
several files, every roof label starts with its file's marker and no two labels overlap."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .page_view import Ceiling, Point

WIDTH, HEIGHT = 960, 600
LEFT, RIGHT, TOP, BOTTOM = 80, 760, 30, 540
DASHES = ("", "6 4", "2 3", "10 3 2 3", "1 5", "12 4", "4 2 1 2", "8 2 8 6")
LABEL_GAP = 15  # pixels between the baselines of two labels (a 12 px text box is 14-15 high)
LABEL_HEIGHT, CHAR_WIDTH = 15, 7.0  # a 12 px label's box: height, width per character (bound)
LEVEL_NAMES = {"dram": "DRAM", "l2": "L2"}


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    colour: str
    dash: str
    label: str
    label_x: float
    label_y: float
    file: str = ""  # the file the roof belongs to (the label's tooltip)
    anchor: str = "start"  # SVG text-anchor: the label starts (or, `end`, ends) at label_x


def label_box(line: Line) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) that the label's text covers, at most (baseline at label_y)."""
    width = CHAR_WIDTH * len(line.label)
    left = line.label_x - width if line.anchor == "end" else line.label_x
    return left, line.label_y - LABEL_HEIGHT + 4, left + width, line.label_y + 4


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@dataclass(frozen=True)
class Marker:
    path: str
    colour: str
    tooltip: str
    anchor: str
    hollow: bool
    stem: tuple[float, float, float] | None = None  # x, y of the kernel, y of its own roof


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    box: tuple[int, int, int, int]
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    lines: list[Line]
    markers: list[Marker]


class _Scale:
    """Decades of data mapped onto pixels, log10 on both axes."""

    def __init__(self, xs: list[float], ys: list[float]) -> None:
        self.x0, self.x1 = _decades(xs)
        self.y0, self.y1 = _decades(ys)

    def px(self, x: float) -> float:
        return LEFT + (math.log10(x) - self.x0) / (self.x1 - self.x0) * (RIGHT - LEFT)

    def py(self, y: float) -> float:
        return BOTTOM - (math.log10(y) - self.y0) / (self.y1 - self.y0) * (BOTTOM - TOP)


def _decades(values: list[float]) -> tuple[int, int]:
    low = math.floor(math.log10(min(values)))
    high = math.ceil(math.log10(max(values)))
    return low, max(high, low + 1)


def build_chart(
    points: list[Point], ceilings: list[Ceiling], files: list[tuple[str, str]] | None = None
) -> Chart | None:
    """The chart, or None when no kernel has both FLOPs and DRAM bytes. `files`: (marker
    symbol, label) per file; with more than one, each roof label says its file."""
    if not points:
        return None
    compute = [c for c in ceilings if c.kind == "compute"]
    bandwidth = [c for c in ceilings if c.kind == "bandwidth"]
    ridges = [c.value / b.value for c in compute for b in bandwidth if b.file == c.file]
    xs = [p.x for p in points] + ridges
    ys = [p.y for p in points] + [c.value for c in compute] + [p.roof for p in points if p.roof]
    scale = _Scale(xs, ys)
    ticks_x = [(scale.px(10.0**d), _power(d)) for d in range(scale.x0, scale.x1 + 1)]
    ticks_y = [(scale.py(10.0**d), _power(d)) for d in range(scale.y0, scale.y1 + 1)]
    drawn = [(c, line) for c in ceilings if (line := _roof(c, ceilings, scale)) is not None]
    owned = files is not None and len(files) > 1
    lines = [_owned(line, files[c.file]) if owned else line for c, line in drawn]  # type: ignore[index]
    spots = [(scale.px(p.x), scale.py(p.y)) for p in points]
    lines = _apart(_spread([_above_slope(line, spots) for line in lines]))
    markers = [
        Marker(_shape(p.marker, scale.px(p.x), scale.py(p.y)), p.colour, p.tooltip, p.anchor,
               p.hollow, _stem(p, scale))
        for p in points
    ]  # fmt: skip
    return Chart(WIDTH, HEIGHT, (LEFT, TOP, RIGHT, BOTTOM), ticks_x, ticks_y, lines, markers)


def _stem(point: Point, scale: _Scale) -> tuple[float, float, float] | None:
    """A kernel's distance to its own binding roof, drawn from the marker up to it."""
    if point.roof is None or point.roof <= point.y:
        return None
    return scale.px(point.x), scale.py(point.y), scale.py(point.roof)


def _above_slope(line: Line, spots: list[tuple[float, float]]) -> Line:
    """A bandwidth slope's label above the slope, ending at a point of it: kernels sit on or
    under their roofs, so the space above a rising slope is free of markers, where its foot
    (low intensity: the memory-bound kernels) is crowded with them. The point is the middle of
    the slope, or the nearest one whose label covers no marker; the label stays in the plot."""
    if line.y1 == line.y2 or line.x2 <= line.x1:
        return line  # a flat roof: labelled at the right edge
    width = CHAR_WIDTH * len(line.label)
    places = []
    for share in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9):
        x = max(line.x1 + (line.x2 - line.x1) * share, LEFT + width + 6)
        y = line.y1 + (line.y2 - line.y1) * (x - line.x1) / (line.x2 - line.x1)
        label_y = max(y - 6, TOP + LABEL_HEIGHT)
        places.append(replace(line, label_x=x - 6, label_y=label_y, anchor="end"))
    for placed in places:
        left, top, right, bottom = label_box(placed)
        if not any(left - 6 < x < right + 6 and top - 6 < y < bottom + 6 for x, y in spots):
            return placed
    return places[0]


def _spread(lines: list[Line]) -> list[Line]:
    """Labels of flat roofs moved apart (top to bottom) so that none overlaps the next."""
    flat = sorted((line for line in lines if line.y1 == line.y2), key=lambda line: line.label_y)
    out, last = {}, -1e9
    for line in flat:
        y = max(line.label_y, last + LABEL_GAP)
        out[id(line)] = replace(line, label_y=y)
        last = y
    return [out.get(id(line), line) for line in lines]


def _owned(line: Line, file: tuple[str, str]) -> Line:
    """The roof's label starting with its file's marker, the file named in its tooltip."""
    marker, label = file
    return replace(line, label=f"{marker} {line.label}", file=f"{marker} {label}")


def _apart(lines: list[Line]) -> list[Line]:
    """Labels moved down (then up) in steps of LABEL_GAP until none overlaps one placed before
    it: two files' DRAM slopes of 4.80 and 4.81 TB/s start at the same pixel."""
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for line in lines:
        for step in (0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8):
            moved = replace(line, label_y=line.label_y + step * LABEL_GAP)
            if not any(_overlap(label_box(moved), box) for box in placed):
                break
        placed.append(label_box(moved))
        out.append(moved)
    return out


def _roof(ceiling: Ceiling, ceilings: list[Ceiling], scale: _Scale) -> Line | None:
    """A flat compute roof from its DRAM ridge to the right edge, or a bandwidth slope from the
    left edge up to the file's highest compute roof (clipped to the plot)."""
    dash = DASHES[ceiling.file % len(DASHES)]
    mine = [c for c in ceilings if c.file == ceiling.file]
    top = max((c.value for c in mine if c.kind == "compute"), default=10.0**scale.y1)
    x_left, x_right = 10.0**scale.x0, 10.0**scale.x1
    if ceiling.kind == "compute":
        dram = next((c.value for c in mine if c.kind == "bandwidth"), None)
        start = max(x_left, ceiling.value / dram) if dram else x_left
        y = scale.py(ceiling.value)
        label = f"{ceiling.name} {ceiling.value:.0f} TFLOP/s"
        return Line(scale.px(start), y, RIGHT, y, "#444", dash, label, RIGHT + 6, y + 4)
    y_start = ceiling.value * x_left
    end = min(x_right, top / ceiling.value)
    if y_start <= 0:
        return None
    x1, y1 = scale.px(x_left), scale.py(y_start)
    if y1 > BOTTOM:  # enters the plot above its bottom edge
        x_enter = 10.0**scale.y0 / ceiling.value
        x1, y1 = scale.px(x_enter), float(BOTTOM)
    x2, y2 = scale.px(end), scale.py(ceiling.value * end)
    name = f"{LEVEL_NAMES.get(ceiling.name, ceiling.name)} {ceiling.value:.2f} TB/s"
    colour = "#1f77b4" if ceiling.name == "dram" else "#17becf"
    return Line(x1, y1, x2, y2, colour, dash, name, x1 + 4, y1 - 6)


def _shape(marker: str, x: float, y: float, size: float = 5.0) -> str:
    """SVG path data of a marker centred on (x, y): one of eight shapes, one per file."""
    s = size
    if marker == "circle":
        return f"M{x - s:.1f},{y:.1f}a{s},{s} 0 1,0 {2 * s:.1f},0a{s},{s} 0 1,0 {-2 * s:.1f},0"
    if marker == "plus":
        w = s * 0.4
        return (
            f"M{x - w:.1f},{y - s:.1f}h{2 * w:.1f}v{s - w:.1f}h{s - w:.1f}v{2 * w:.1f}"
            f"h{w - s:.1f}v{s - w:.1f}h{-2 * w:.1f}v{w - s:.1f}h{w - s:.1f}v{-2 * w:.1f}"
            f"h{s - w:.1f}z"
        )
    corners = {
        "square": [(x - s, y - s), (x + s, y - s), (x + s, y + s), (x - s, y + s)],
        "triangle": [(x, y - s * 1.2), (x + s, y + s * 0.8), (x - s, y + s * 0.8)],
        "diamond": [(x, y - s * 1.3), (x + s, y), (x, y + s * 1.3), (x - s, y)],
        "down": [(x, y + s * 1.2), (x + s, y - s * 0.8), (x - s, y - s * 0.8)],
        "hexagon": [(x + s * math.cos(a), y + s * math.sin(a)) for a in _angles(6, 0.0)],
        "star": [
            (x + r * math.cos(a), y + r * math.sin(a))
            for i, a in enumerate(_angles(10, -math.pi / 2))
            for r in [s * 1.3 if i % 2 == 0 else s * 0.55]
        ],
    }[marker]
    return "M" + "L".join(f"{cx:.1f},{cy:.1f}" for cx, cy in corners) + "z"


def _angles(count: int, start: float) -> list[float]:
    return [start + 2 * math.pi * i / count for i in range(count)]


def _power(decade: int) -> str:
    return f"{10.0**decade:g}" if -3 <= decade <= 4 else f"1e{decade}"
