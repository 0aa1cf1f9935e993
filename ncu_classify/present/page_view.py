"""What a page shows, computed once for the HTML and Markdown forms: each cards file's header
(GPU, software, rules, when), the recorded program's coverage and replay fidelity, per-stage
time shares, every card with its dominant kernel's roofline, and the points and ceilings of the
roofline chart.

All text stays as the user's files wrote it; escaping is the renderers' job (jinja2's
autoescape, Markdown code spans).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cards.headroom import CardHeadroom, card_headroom, kernel_headroom
from ..cards.machine import CaptureInfo, first_gpu, sm_clock_range
from ..cards.model import Card, CardFile, KernelCard
from ..cards.rollup import (
    KernelClassRow,
    SummaryRow,
    by_kernel_class,
    by_stage,
    card_class,
    kernel_class,
    median_ceilings,
    named_dominant,
)
from ..core.text import printable
from ..tries.results import TryResults
from .coverage import FileCoverage, file_coverage
from .next_moves import NextMoves, next_moves

MARKERS = ("circle", "square", "triangle", "diamond", "down", "plus", "star", "hexagon")
# The chart's range: kernels outside it (a counter gone wrong) are listed, not drawn, so that
# one absurd value cannot stretch the axes over hundreds of decades.
X_RANGE = (1e-4, 1e6)  # FLOP per DRAM byte
Y_RANGE = (1e-6, 1e5)  # TFLOP/s
# Colour per class: the legacy and roofline rule names first, then a fixed cycle.
CLASS_COLOURS = {
    "compute_bound": "#d62728",
    "tensor_pipe_bound": "#d62728",
    "fp32_pipe_bound": "#ff7f0e",
    "issue_bound": "#bcbd22",
    "l1_shared_bound": "#8c564b",
    "dram_bandwidth_bound": "#1f77b4",
    "l2_bandwidth_bound": "#17becf",
    "partial_wave_tail": "#9467bd",
    "grid_under_one_wave": "#9467bd",
    "tail_after_full_waves": "#e377c2",
    "latency_or_occupancy_limited": "#2ca02c",
    "unresolved_no_dominant_limiter": "#7f7f7f",
}
OTHER_COLOURS = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd")
# Cards per file shown with a table row, their kernels and chart markers: the ones with the most
# kernel time per inference. A page of every card of a 100k-kernel file (64k cards) is ~1.5M
# elements that a browser takes minutes to lay out; the rest are one text line each (`MoreCards`).
SHOWN_CARDS = 500


@dataclass(frozen=True)
class FileView:
    """One cards file of the page."""

    index: int
    label: str
    marker: str
    header: list[tuple[str, str]]
    stages: list[SummaryRow]
    warnings: list[str]
    kernel_classes: list[KernelClassRow]  # the same time, each kernel under its own class
    coverage: FileCoverage  # of the recorded program, and replay fidelity; or "unknown"
    headroom: NextMoves  # per stage at kernel roofs and speed of light; the moves ranked


@dataclass(frozen=True)
class CardView:
    """One card: the table row and its details."""

    anchor: str
    file: int
    card: Card
    dominant: KernelCard | None
    share_of_stage: float | None
    colour: str
    room: CardHeadroom | None = None  # recoverable time: at kernel roofs, at speed of light


@dataclass(frozen=True)
class Point:
    """A kernel on the chart: data coordinates and what its tooltip says."""

    x: float
    y: float
    file: int
    colour: str
    marker: str
    tooltip: str
    anchor: str
    hollow: bool = False  # compute-bound by a unit that is not a math pipe (verdict_note)
    roof: float | None = None  # TFLOP/s of its own binding roof: the chart draws the distance


@dataclass(frozen=True)
class Ceiling:
    """A roof of one file: `kind` compute (TFLOP/s) or bandwidth (TB/s)."""

    file: int
    kind: str
    name: str
    value: float


@dataclass(frozen=True)
class MoreCards:
    """A file's cards past SHOWN_CARDS: how many, and one line each (stage, shape, class, kernel
    us per inference) in file order, as plain text."""

    file: int
    count: int
    text: str


@dataclass
class PageView:
    """Everything a page renders."""

    title: str
    files: list[FileView]
    cards: list[CardView]
    points: list[Point]
    ceilings: list[Ceiling]
    classes: list[tuple[str, str]]  # (class, colour) in legend order
    off_chart: int = 0  # kernels without FLOPs or bytes: not on a log-log chart
    out_of_range: int = 0  # kernels whose figures fall outside X_RANGE / Y_RANGE
    notes: list[str] = field(default_factory=list)
    more: list[MoreCards] = field(default_factory=list)  # per file, the cards not shown


def build_view(
    files: list[tuple[str, CardFile]], title: str, tries: Sequence[tuple[str, TryResults]] = ()
) -> PageView:
    """The page of `files` ((label, cards) pairs), in their order."""
    classes = _class_colours(c for _, cards in files for c in cards.cards)
    views, cards_out, points, ceilings, more = [], [], [], [], []
    off_chart = out_of_range = 0
    for index, (label, cards) in enumerate(files):
        marker = MARKERS[index % len(MARKERS)]
        stages = by_stage(cards.cards)
        views.append(
            FileView(
                index,
                label,
                marker,
                _header(label, cards),
                stages,
                _warnings(cards),
                by_kernel_class(cards.cards),
                file_coverage(cards),
                next_moves(cards, label, (), tries),
            )
        )
        totals: dict[str, float] = {}
        for row in stages:
            totals[row.stage] = totals.get(row.stage, 0.0) + (row.kernel_us or 0.0)
        shown = _shown(cards.cards)
        hidden = []
        for number, card in enumerate(cards.cards):
            anchor = f"f{index}c{number}"
            total = totals.get(card.stage) or 0.0
            per_inference = _per_inference(card)
            share = per_inference / total if per_inference is not None and total else None
            if number not in shown:
                hidden.append(card)
                continue
            colour = classes.get(_class(card), "#7f7f7f")
            top = named_dominant(card)
            room = card_headroom(card)
            cards_out.append(CardView(anchor, index, card, top, share, colour, room))
            for kernel in card.kernels:
                point = _point(card, kernel, index, marker, classes, anchor, label)
                if point is None:
                    off_chart += 1
                elif not _in_range(point):
                    out_of_range += 1
                else:
                    points.append(point)
        ceilings += _ceilings(index, cards)
        if hidden:
            more.append(MoreCards(index, len(hidden), _more_text(hidden)))
    return PageView(
        title=title,
        files=views,
        cards=cards_out,
        points=points,
        ceilings=ceilings,
        classes=sorted(classes.items(), key=lambda kv: list(classes).index(kv[0])),
        off_chart=off_chart,
        out_of_range=out_of_range,
        more=more,
    )


def _shown(cards: list[Card]) -> set[int]:
    """Positions of the SHOWN_CARDS cards with the most kernel time per inference (the earlier
    card first among equal times; untimed cards last): all of them in a file of that many."""
    if len(cards) <= SHOWN_CARDS:
        return set(range(len(cards)))
    ranked = sorted(range(len(cards)), key=lambda i: -(_per_inference(cards[i]) or 0.0))
    return set(ranked[:SHOWN_CARDS])


def _more_text(cards: list[Card]) -> str:
    """One line per card: stage, shape, class, kernel us per inference (user text printable,
    so one card is one line)."""
    lines = []
    for card in cards:
        us = _per_inference(card)
        time = "-" if us is None else f"{us:,.1f} us"
        lines.append(f"{printable(card.stage)}  {printable(card.group)}  {_class(card)}  {time}")
    return "\n".join(lines)


def _in_range(point: Point) -> bool:
    return X_RANGE[0] <= point.x <= X_RANGE[1] and Y_RANGE[0] <= point.y <= Y_RANGE[1]


def _per_inference(card: Card) -> float | None:
    """Kernel time of a card per inference: its summed kernel time x its calls."""
    return None if card.summed_kernel_us is None else card.summed_kernel_us * card.calls


def _class(card: Card) -> str:
    return card.primary or card.status


def _class_colours(cards: Any) -> dict[str, str]:
    """A colour per class present (card classes and kernel classes), stable across runs."""
    names: set[str] = set()
    for card in cards:  # the first verdicts and the classes summaries count (settled ones)
        names.update((_class(card), card_class(card)[1]))
        names.update(kernel_class(k) for k in card.kernels)
        names.update(k.classification for k in card.kernels if k.classification)
    out, others = {}, iter(OTHER_COLOURS * 4)
    for name in sorted(names, key=lambda n: (n not in CLASS_COLOURS, n)):
        out[name] = CLASS_COLOURS.get(name) or next(others, "#7f7f7f")
    return out


def _header(label: str, cards: CardFile) -> list[tuple[str, str]]:
    """(field, value) lines naming the GPU, software, rules and dates of a cards file."""
    gpu = first_gpu(c.gpu for c in cards.cards)
    capture = cards.captures[0] if cards.captures else CaptureInfo()
    clocks = sm_clock_range(c.gpu for c in cards.cards)
    lines = [
        ("file", label),
        (
            "GPU",
            f"{gpu.name}, {'?' if gpu.sm_count is None else gpu.sm_count} SMs"
            if gpu.name is not None
            else "not recorded",
        ),
        ("SM clock seen", f"{clocks[0]:.3f}-{clocks[1]:.3f} GHz" if clocks else "not recorded"),
    ]
    for key, name in (
        ("driver", "driver"),
        ("ncu", "Nsight Compute"),
        ("cuda_runtime", "CUDA runtime"),
        ("torch", "torch"),
        ("cudnn", "cuDNN"),
        ("created_at", "captured"),
        ("shapes_file", "shapes file"),
    ):
        value = getattr(capture, key)
        lines.append((name, "not recorded" if value is None else str(value)))
    lines[1:1] = [("projection", cards.projection.line())] if cards.projection else []
    lines += [
        ("rules", _rules(cards)),
        ("classified", cards.generated_at or "not recorded"),
        ("tool", f"ncu-classify {cards.tool_version or '(legacy cards)'}"),
        ("cards", str(len(cards.cards))),
    ]
    return lines


def _rules(cards: CardFile) -> str:
    if cards.rules_id is None:
        return "not recorded (legacy cards: reclassify them to name the rules)"
    return f"{cards.rules_id} (sha256 {str(cards.rules_sha256)[:12]})"


def _warnings(cards: CardFile) -> list[str]:
    out = list(cards.input_errors) + list(cards.input_warnings)
    if not cards.captures:
        out.append("no capture manifest was read: driver, ncu, torch and cuDNN are not recorded")
    return out


def _duration(kernel: KernelCard) -> str:
    """A kernel's duration for a tooltip; `duration unknown` without one, never `None us`."""
    duration = kernel.metrics.get("dur_us")
    return "duration unknown" if duration is None else f"{duration} us"


def _point(
    card: Card,
    kernel: KernelCard,
    index: int,
    marker: str,
    classes: dict[str, str],
    anchor: str,
    label: str,
) -> Point | None:
    roof = kernel.roofline
    if roof is None:
        return None
    x, y = roof.intensity.get("dram"), roof.achieved_tflops
    if x is None or y is None or x <= 0 or y <= 0 or not math.isfinite(x * y):
        return None
    klass = kernel.classification or "unclassified"
    pct = f"{roof.pct_of_roof:.1f} % of its {roof.binding} roof" if roof.pct_of_roof else ""
    room = kernel_headroom(kernel)
    at_roof = f"{room.roof_us:g} us at its roof, {room.headroom_us:g} us headroom" if room else ""
    tooltip = "\n".join(
        part
        for part in (
            f"{card.group} [{label}]",
            kernel.kernel,
            f"{klass}; {y:.4g} TFLOP/s at {x:.4g} FLOP/DRAM byte; {pct}",
            f"{_duration(kernel)}; {at_roof}",
            kernel.verdict_note or "",
        )
        if part
    )
    colour = classes.get(klass, "#7f7f7f")
    hollow = kernel.verdict_note is not None
    return Point(x, y, index, colour, marker, tooltip, anchor, hollow, roof.roof_tflops)


def _ceilings(index: int, cards: CardFile) -> list[Ceiling]:
    """Median ceilings the file's kernels measured: compute per FLOP family, DRAM TB/s (an L2
    slope would need L2 intensity on the x axis)."""
    compute, bandwidth = median_ceilings(k for card in cards.cards for k in card.kernels)
    out = [Ceiling(index, "compute", family, value) for family, value in compute.items()]
    if "dram" in bandwidth:  # the x axis is FLOP per DRAM byte
        out.append(Ceiling(index, "bandwidth", "dram", bandwidth["dram"]))
    return out
