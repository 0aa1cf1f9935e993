"""What a cards file adds up to, computed one way for every command: the dominant kernel of a
card, cards counted per class (the file's `summary` and `by_stage`), kernel time per inference
per (stage, card class), weighted by each card's calls (summary, report and diff alike), and the
same time per (stage, kernel class): each kernel under its own class, so that a conv card's
transposes and bias add count as what they are, not as its GEMM's class."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..core.ordering import stage_order
from .model import UNRESOLVED, Card, KernelCard

UNCLASSIFIED = "unclassified"  # a kernel without any evidence gets no class


def dominant(kernels: list[KernelCard]) -> KernelCard | None:
    """The longest kernel (first of equals); a lone kernel dominates even without a duration;
    None if several kernels and none has a duration."""
    timed = [k for k in kernels if k.metrics.get("dur_us") is not None]
    if not timed:
        return kernels[0] if len(kernels) == 1 else None
    return max(timed, key=lambda k: k.metrics["dur_us"] or 0.0)


def named_dominant(card: Card) -> KernelCard | None:
    """The kernel the card names as its dominant one (`dominant_kernel`), None if it names none
    or lists it not (a truncated legacy card). Of kernels sharing that name (a `cat` launches
    one copy kernel per input), the longest, as `dominant` chose it."""
    named = [k for k in card.kernels if k.kernel == card.dominant_kernel]
    return dominant(named) or (named[0] if named else None)


def median_ceilings(kernels: Iterable[KernelCard]) -> tuple[dict[str, float], dict[str, float]]:
    """Median ceilings the kernels measured, of each FLOP family used (TFLOP/s) and of each
    memory level (TB/s), keys sorted; a ceiling that is missing or not positive is no figure."""
    compute: dict[str, list[float]] = {}
    bandwidth: dict[str, list[float]] = {}
    for kernel in kernels:
        roof = kernel.roofline
        if roof is None:
            continue
        if roof.family and roof.compute_ceiling_tflops:
            compute.setdefault(roof.family, []).append(roof.compute_ceiling_tflops)
        for level, value in roof.bandwidth_tbps.items():
            if value:
                bandwidth.setdefault(level, []).append(value)
    return _medians(compute), _medians(bandwidth)


def _medians(values: dict[str, list[float]]) -> dict[str, float]:
    return {key: statistics.median(seen) for key, seen in sorted(values.items())}


def count_classes(
    pairs: Iterable[tuple[str, str]],
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Cards per class from (stage, class) pairs, overall and per stage, keys sorted."""
    overall: Counter[str] = Counter()
    stages: dict[str, Counter[str]] = {}
    for stage, key in pairs:
        overall[key] += 1
        stages.setdefault(stage, Counter())[key] += 1
    return dict(sorted(overall.items())), {s: dict(sorted(c.items())) for s, c in stages.items()}


def card_class(card: Card) -> tuple[str, str]:
    """(stage, class) of a card: its primary class, or for an unresolved card the class a
    drill-down settled it on; a card without a verdict counts under its status."""
    if card.status == "unresolved" and card.settled is not None:
        return card.stage, card.settled.primary
    return card.stage, card.primary or card.status


@dataclass(frozen=True)
class SummaryRow:
    """One (stage, class) cell: how many cards, and their summed kernel time."""

    stage: str
    primary: str
    cards: int
    calls: int  # runs per inference of these cards' shapes (1 each unless recorded)
    kernel_us: float | None  # summed kernel time x calls of the cards that have a total;
    # None: no card of the cell has one (its time is unknown, never 0)
    share_of_stage: float | None  # of the stage's kernel time; None if no time known
    untimed: int = 0  # cards without a total (failed, or a kernel without a duration)


def by_stage(cards: Sequence[Card]) -> list[SummaryRow]:
    """Cards and kernel time per inference (summed kernel time x calls) per (stage, class); a
    card without a class counts under its status. Stages in `stage_order` (first-seen,
    numbered ones in numeric order), most time first within one, then by class. One pass over
    the cards and one sort of the cells, in plain Python (pandas cost 10 ms per stage and its
    import; sums are exact, math.fsum)."""
    cells: dict[tuple[str, str], _Cell] = {}
    for card in cards:
        key = card_class(card)
        cell = cells.get(key)
        if cell is None:
            cell = cells[key] = _Cell()
        cell.add(card.summed_kernel_us, card.calls)
    position = {stage: i for i, stage in enumerate(stage_order(k[0] for k in cells))}
    totals: dict[str, list[float]] = {}
    for (stage, _), cell in cells.items():
        totals.setdefault(stage, []).extend(cell.times)
    stage_total = {stage: math.fsum(times) for stage, times in totals.items()}
    ordered = sorted(
        cells.items(), key=lambda item: (position[item[0][0]], -item[1].sum(), item[0][1])
    )
    return [
        SummaryRow(
            stage,
            primary,
            cell.count,
            cell.calls,
            round(cell.sum(), 3) if cell.times else None,
            cell.sum() / stage_total[stage] if stage_total[stage] and cell.times else None,
            cell.untimed,
        )
        for (stage, primary), cell in ordered
    ]


@dataclass
class _Cell:
    """One (stage, class) cell being summed: cards, calls, times per inference, untimed."""

    count: int = 0
    calls: int = 0
    untimed: int = 0
    times: list[float] = field(default_factory=list)

    def add(self, summed_us: float | None, calls: int) -> None:
        self.count += 1
        self.calls += calls
        if summed_us is None or summed_us != summed_us:  # None or NaN: no total
            self.untimed += 1
        else:
            self.times.append(summed_us * calls)

    def sum(self) -> float:
        return math.fsum(self.times)


@dataclass(frozen=True)
class KernelClassRow:
    """One (stage, kernel class) cell: how many kernels, and their time per inference."""

    stage: str
    kernel_class: str  # the kernel's own class; a card without kernels counts under its status
    kernels: int  # kernels of this class in the stage's cards (once per card, not per call)
    kernel_us: float | None  # their durations x their cards' calls; None: none has a duration
    share_of_stage: float | None  # of the stage's kernel time per inference; None if none known
    untimed: int = 0  # kernels without a duration, and cards without any kernel (failed ones)


def kernel_class(kernel: KernelCard) -> str:
    """A kernel's class as the summaries count it: its own, or for an unresolved kernel the
    class its drill-down settled on (`unclassified` without any evidence)."""
    drill = kernel.drill_down
    if kernel.classification == UNRESOLVED and drill is not None and drill.settled:
        return drill.settled
    return kernel.classification or UNCLASSIFIED


def by_kernel_class(cards: Sequence[Card]) -> list[KernelClassRow]:
    """Kernel time per inference per (stage, kernel class), each kernel under its own class
    (`kernel_class`). Stages in `stage_order`, most time first within one, as `by_stage`."""
    cells: dict[tuple[str, str], list[float]] = {}  # -> [kernels, us, untimed, timed]
    for card in cards:
        if not card.kernels:
            cell = cells.setdefault(card_class(card), [0, 0.0, 0, 0])
            cell[2] += 1
        for kernel in card.kernels:
            cell = cells.setdefault((card.stage, kernel_class(kernel)), [0, 0.0, 0, 0])
            duration = kernel.metrics.get("dur_us")
            cell[0] += 1
            if duration is None:
                cell[2] += 1
            else:
                cell[1] += duration * card.calls
                cell[3] += 1
    totals: dict[str, float] = {}
    for (stage, _), (_, us, _, _) in cells.items():
        totals[stage] = totals.get(stage, 0.0) + us
    position = {stage: i for i, stage in enumerate(stage_order(s for s, _ in cells))}
    order = sorted(cells, key=lambda k: (position[k[0]], -cells[k][1], k[1]))
    return [
        KernelClassRow(
            stage,
            kernel_class,
            int(cells[stage, kernel_class][0]),
            round(cells[stage, kernel_class][1], 3) if cells[stage, kernel_class][3] else None,
            cells[stage, kernel_class][1] / totals[stage]
            if totals[stage] and cells[stage, kernel_class][3]
            else None,
            int(cells[stage, kernel_class][2]),
        )
        for stage, kernel_class in order
    ]
