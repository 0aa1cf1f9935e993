"""What share of the recorded program's kernel time a cards file stands for, in the forms every
view shows it: the lines after a summary table, the rows of `summary --by coverage` (and of the
`coverage` DataFrame), the page's Coverage section; and how faithful each timed card's replay
is to the program's own call (`summary --by fidelity`, the page's Replay fidelity section).

Where a cards file does not know (cards not made from a recorded program, no card timed at
record time) every view says so in words, never by leaving the line out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..cards.coverage import BELOW_TARGET_WHY, WITHOUT_MANIFEST, StageCoverage, UncoveredWork
from ..cards.fidelity import FIDELITY_TOLERANCE, fidelity
from ..cards.model import CardFile
from ..core.ordering import stage_order
from ..core.text import counted

UNKNOWN = "these cards were not made from a recorded program (ncu-classify record)"
NO_MANIFEST = (
    "a capture folder was read without its manifest.json, which carries the recorded program's"
    " times (see the warning)"
)
STAGE_UNKNOWN = "its cards were not made from a recorded program (ncu-classify record)"
STAGE_ITEM = "(stage)"  # the item of a stage's own row in the coverage table
UNKNOWN_ITEM = "(coverage unknown)"
BASIS = {
    "kernel_time": "of the program's kernel time (torch.profiler at record)",
    "calls": "device-op calls (recorded without a GPU: by calls)",
}
BASIS_SHORT = {
    "kernel_time": "kernel time (torch.profiler at record)",
    "calls": "op calls (recorded without a GPU)",
}
TOP_IN_LINE = 3  # uncovered items named in a stage's summary line
TOP_IN_PAGE = 20  # uncovered items and fidelity rows listed on a page
Item = TypeVar("Item")


@dataclass(frozen=True)
class CoverageRow:
    """A stage of the recorded program (item `(stage)`) or one piece of its work no card
    covers; a stage whose cards know no program has item `(coverage unknown)`."""

    stage: str | None
    item: str
    why: str | None = None
    basis: str | None = None  # kernel_time or calls
    coverage_pct: float | None = None
    calls: int | None = None
    covered_calls: int | None = None
    real_us: float | None = None  # the program's kernel time per run (the stage's, or the item's)
    covered_real_us: float | None = None
    replayed_us: float | None = None
    light_shapes: int | None = None  # of the stage's covered shapes, those captured light
    light_real_us: float | None = None  # their program kernel time per run


# The figures of a stage's own row, as StageCoverage names them.
STAGE_FIELDS = {"stage", "basis", "coverage_pct", "calls", "covered_calls", "real_us",
                "covered_real_us", "replayed_us", "light_shapes", "light_real_us"}  # fmt: skip


@dataclass(frozen=True)
class FidelityRow:
    """A card whose recording timed its shape: replayed time per call against the program's."""

    group: str
    stage: str
    calls: int
    real_us: float  # the program's kernel time per call (torch.profiler at record)
    replayed_us: float  # the card's summed kernel time (ncu, one call)
    ratio: float  # replayed / real
    difference_us: float  # (replayed - real) x calls: per inference
    note: str | None  # the likely cause, where the two differ by more than 10 %


@dataclass(frozen=True)
class FileCoverage:
    """Coverage and replay fidelity of one cards file as a page shows them."""

    stages: list[StageCoverage]
    unknown: str | None  # the sentence when no stage is known
    unknown_stages: list[str]  # lines for stages whose cards know no program
    uncovered: list[tuple[str, UncoveredWork]]  # (stage, item), largest first, at most 20
    more_uncovered: int
    fidelity_line: str
    fidelity: list[FidelityRow] = field(default_factory=list)  # > 10 % off, at most 20
    more_fidelity: int = 0


def unknown_stages(cards: CardFile) -> list[str]:
    """Stages with cards but no coverage, in stage order (all of them for a file without any
    coverage)."""
    known = {s.stage for s in cards.coverage}
    return [s for s in stage_order(c.stage for c in cards.cards) if s not in known]


def coverage_rows(cards: CardFile) -> list[CoverageRow]:
    """One row per recorded stage and one per item of its work no card covers (largest
    first); for a file without coverage one `(coverage unknown)` row without a stage, and one
    per stage whose cards know no program beside recorded ones."""
    rows = []
    for stage in cards.coverage:
        rows.append(
            CoverageRow(
                item=STAGE_ITEM,
                **stage.model_dump(include=STAGE_FIELDS),
            )
        )
        rows += [_uncovered_row(stage, work) for work in stage.uncovered]
    missing: list[str | None] = [*unknown_stages(cards)] if cards.coverage else [None]
    for name in missing:
        why = STAGE_UNKNOWN if cards.coverage else UNKNOWN
        rows.append(CoverageRow(stage=name, item=UNKNOWN_ITEM, why=why))
    return rows


def _uncovered_row(stage: StageCoverage, work: UncoveredWork) -> CoverageRow:
    return CoverageRow(
        stage=stage.stage,
        item=work.name,
        why=work.why,
        basis=stage.basis,
        calls=work.calls,
        real_us=work.real_us,
    )


def millis(us: float | None) -> str:
    """Microseconds as milliseconds for people: `258.8 ms`, `0.189 ms`; `unknown` if None."""
    if us is None:
        return "unknown"
    ms = us / 1000
    return f"{ms:,.1f} ms" if ms >= 10 else f"{ms:.3g} ms"


def unknown_why(cards: CardFile) -> str:
    """Why a cards file without coverage has none: a capture folder read without its manifest,
    else cards not made from a recorded program."""
    lost = any(WITHOUT_MANIFEST in warning for warning in cards.input_warnings)
    return NO_MANIFEST if lost else UNKNOWN


def coverage_lines(cards: CardFile) -> list[str]:
    """The lines a summary prints after its table: one per stage, or the one line saying
    coverage is unknown. Plain text, not yet escaped for a terminal."""
    if not cards.coverage:
        return [f"coverage: unknown: {unknown_why(cards)}"]
    lines = [stage_line(stage) for stage in cards.coverage]
    lines += [f"coverage {name}: unknown: {STAGE_UNKNOWN}" for name in unknown_stages(cards)]
    return lines


def stage_line(stage: StageCoverage) -> str:
    """`coverage dit: 100.0 % of 258.8 ms of the program's kernel time (...); replayed ...;
    not covered: ...` (by calls for a recording made without a GPU)."""
    share = "unknown share" if stage.coverage_pct is None else f"{stage.coverage_pct:.1f} %"
    if stage.basis == "kernel_time":
        whole = f"{millis(stage.real_us)} {BASIS['kernel_time']}"
    else:
        whole = f"{stage.calls:,} {BASIS['calls']}"
    shown, rest = pinned(stage.uncovered, TOP_IN_LINE, lambda work: work)
    items = [_item_text(work, stage.basis) for work in shown]
    if rest:
        timed = stage.basis == "kernel_time" and all(w.real_us is not None for w in rest)
        time = f" ({millis(sum(w.real_us or 0 for w in rest))})" if timed else ""
        items.append(f"and {len(rest)} more{time}")
    return (
        f"coverage {stage.stage}: {share} of {whole}{light_clause(stage)};"
        f" replayed {millis(stage.replayed_us)};"
        f" not covered: {', '.join(items) or 'nothing'}"
    )


def light_clause(stage: StageCoverage) -> str:
    """` (63 shapes, 13.9 ms, with the light list)`: of the covered shapes, those `capture
    --light-after` took with the light metric list; empty where none was."""
    if not stage.light_shapes:
        return ""
    time = f", {millis(stage.light_real_us)}" if stage.light_real_us is not None else ""
    return f" ({counted(stage.light_shapes, 'shape')}{time}, with the light list)"


def pinned(
    items: list[Item], top: int, work: Callable[[Item], UncoveredWork]
) -> tuple[list[Item], list[Item]]:
    """The first `top` items, then any later one that is a stage's shapes below the coverage
    target (every coverage line names them: in a capture stopped short, its pending shapes
    pushed them into `and 95 more`); and the rest."""
    below = [item for item in items[top:] if work(item).why == BELOW_TARGET_WHY]
    rest = [item for item in items[top:] if work(item).why != BELOW_TARGET_WHY]
    return items[:top] + below, rest


def _item_text(work: UncoveredWork, basis: str) -> str:
    calls = f"{work.calls:,} call{'s' if work.calls != 1 else ''}"
    if basis == "kernel_time":
        return f"{work.name} {millis(work.real_us)} ({calls})"
    return f"{work.name} ({calls})"


def fidelity_rows(cards: CardFile, off_only: bool = False) -> list[FidelityRow]:
    """Every card with the program's own time and a replayed one (or only those more than 10 %
    away), the largest difference per inference first (file order among equals)."""
    rows = []
    for card in cards.cards:
        found = fidelity(card)
        if found is None or (off_only and found.note is None):
            continue
        rows.append(
            FidelityRow(
                group=found.group,
                stage=found.stage,
                calls=card.calls,
                real_us=found.real_us,
                replayed_us=found.replayed_us,
                ratio=found.ratio,
                difference_us=round((found.replayed_us - found.real_us) * card.calls, 3),
                note=found.note,
            )
        )
    return sorted(rows, key=lambda row: -abs(row.difference_us))


def fidelity_line(cards: CardFile) -> str:
    """How many timed cards replay more than 10 % away from the program, or that it is
    unknown."""
    timed = fidelity_rows(cards)
    if not timed:
        return (
            "fidelity: unknown: no card carries the program's own time per call (cards of a"
            " program recorded on a GPU with ncu-classify record do)"
        )
    off = sum(row.note is not None for row in timed)
    return (
        f"fidelity: {off} of {len(timed)} timed cards replay more than"
        f" {100 * FIDELITY_TOLERANCE:.0f} % away from the program's own time per call"
        + ("; the largest difference per inference first" if off else "")
    )


def file_coverage(cards: CardFile) -> FileCoverage:
    """What a page shows of one file's coverage and replay fidelity."""
    items = [(stage.stage, work) for stage in cards.coverage for work in stage.uncovered]
    items.sort(key=lambda pair: (-(pair[1].real_us or 0), -pair[1].calls))
    off = fidelity_rows(cards, off_only=True)
    shown, rest = pinned(items, TOP_IN_PAGE, lambda pair: pair[1])
    return FileCoverage(
        stages=list(cards.coverage),
        unknown=None if cards.coverage else f"coverage unknown: {unknown_why(cards)}",
        unknown_stages=[
            f"coverage {name}: unknown: {STAGE_UNKNOWN}"
            for name in (unknown_stages(cards) if cards.coverage else [])
        ],
        uncovered=shown,
        more_uncovered=len(rest),
        fidelity_line=fidelity_line(cards),
        fidelity=off[:TOP_IN_PAGE],
        more_fidelity=max(len(off) - TOP_IN_PAGE, 0),
    )
