"""Summaries of a CardFile: per stage (cards per class and their share of kernel time), per
stage by each kernel's own class (a card's transposes and bias add under their own class, not
under its dominant kernel's), per shape (one row per card, with why a failed or incomplete
card has no class), the recorded program's coverage per stage with what no card covers, or
each timed card's replay against the program's own time (fidelity). Every view for people ends
with the stability of repeated verdicts (capture --repeat), what a light capture left unchecked
and the coverage lines (`summary_notes`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal, overload

from ..cards.model import UNRESOLVED, Card, CardFile
from ..cards.rollup import (
    KernelClassRow,
    SummaryRow,
    by_kernel_class,
    by_stage,
    card_class,
    dominant,
)
from ..core.text import figure
from .coverage import (
    CoverageRow,
    FidelityRow,
    coverage_lines,
    coverage_rows,
    fidelity_line,
    fidelity_rows,
)
from .tables import csv_text

SummaryBy = Literal["stage", "kernel", "shape", "coverage", "fidelity"]
SUMMARY_VIEWS: tuple[SummaryBy, ...] = ("stage", "kernel", "shape", "coverage", "fidelity")


@dataclass(frozen=True)
class ShapeRow:
    """One card: its class (or status when it has none), time per call and per inference (x its
    calls per inference), dominant kernel and problem."""

    stage: str
    group: str
    primary: str
    status: str
    calls: int  # runs of the shape per inference (1 unless recorded)
    kernel_us_per_call: float | None  # the card's summed kernel time: one call of its op
    kernel_us_per_inference: float | None  # x calls, as `--by stage` sums it
    dominant_kernel: str | None
    problem: str | None  # error of a failed card, notes of an incomplete one
    stability: str | None = None  # stable / unstable over its repeats (capture --repeat)


Rows = (
    list[SummaryRow] | list[KernelClassRow] | list[ShapeRow] | list[CoverageRow] | list[FidelityRow]
)
FIELDS: dict[SummaryBy, list[str]] = {
    "stage": [f.name for f in fields(SummaryRow)],
    "kernel": [f.name for f in fields(KernelClassRow)],
    "shape": [f.name for f in fields(ShapeRow)],
    "coverage": [f.name for f in fields(CoverageRow)],
    "fidelity": [f.name for f in fields(FidelityRow)],
}
# Every time column says what it is per, in the CSV, Parquet and the tables' headers alike (the
# rows' own fields keep the cards' names): the stage and kernel views sum time x calls.
PER: dict[SummaryBy, dict[str, str]] = {
    "stage": {"kernel_us": "kernel_us_per_inference"},
    "kernel": {"kernel_us": "kernel_us_per_inference"},
    "shape": {},
    "coverage": {
        "real_us": "real_us_per_inference",
        "covered_real_us": "covered_real_us_per_inference",
        "replayed_us": "replayed_us_per_inference",
        "light_real_us": "light_real_us_per_inference",
    },
    "fidelity": {
        "real_us": "real_us_per_call",
        "replayed_us": "replayed_us_per_call",
        "difference_us": "difference_us_per_inference",
    },
}
COLUMNS: dict[SummaryBy, list[str]] = {
    by: [PER[by].get(name, name) for name in names] for by, names in FIELDS.items()
}
PEOPLE_FIELDS: dict[SummaryBy, list[str]] = {
    "coverage": ["stage", "item", "coverage_pct", "calls", "real_us", "replayed_us", "why"],
}
TITLES: dict[SummaryBy, str] = {
    "stage": "primary class per stage (share of the stage's kernel time per inference)",
    "kernel": "kernel class per stage (each kernel under its own class; share of the"
    " stage's kernel time per inference)",
    "shape": "verdict per shape (kernel time of one call of its op, and x its calls per inference)",
    "coverage": "coverage of the recorded program per stage (the program's kernel time per"
    " inference, replayed time), and what no card covers",
    "fidelity": "replays more than 10 % away from the program's own time per call",
}
# the columns of ids and free text, which fold first on a narrow terminal (present.fit)
FOLDING = ("stage", "group", "dominant_kernel", "problem", "item", "why", "note")
NUMERIC = frozenset(
    {"cards", "kernels", "calls", "share_of_stage", "untimed", "coverage_pct", "covered_calls"}
    | {"ratio", "kernel_us_per_call", *(n for p in PER.values() for n in p.values())}
    | {"kernel_us_per_inference"}
)


@overload
def summarize(cards: CardFile, by: Literal["stage"] = ...) -> list[SummaryRow]: ...
@overload
def summarize(cards: CardFile, by: Literal["kernel"]) -> list[KernelClassRow]: ...
@overload
def summarize(cards: CardFile, by: Literal["shape"]) -> list[ShapeRow]: ...
@overload
def summarize(cards: CardFile, by: Literal["coverage"]) -> list[CoverageRow]: ...
@overload
def summarize(cards: CardFile, by: Literal["fidelity"]) -> list[FidelityRow]: ...
@overload
def summarize(cards: CardFile, by: SummaryBy) -> Rows: ...
def summarize(cards: CardFile, by: SummaryBy = "stage") -> Rows:
    """Rows per stage and card class or kernel class (stages in `stage_order`, most time
    first), per card (in the file's order), per recorded stage and uncovered item (coverage),
    or per timed card (fidelity: all of them, the largest difference per inference first)."""
    if by == "shape":
        return [shape_row(card) for card in cards.cards]
    if by == "coverage":
        return coverage_rows(cards)
    if by == "fidelity":
        return fidelity_rows(cards)
    if by == "kernel":
        return by_kernel_class(cards.cards)
    return by_stage(cards.cards)


def shape_row(card: Card) -> ShapeRow:
    """The per-shape row of one card."""
    problem = None
    if card.status in ("failed", "incomplete"):
        problem = "; ".join([card.error] if card.error else card.notes) or None
    per_call = card.summed_kernel_us
    return ShapeRow(
        stage=card.stage,
        group=card.group,
        primary=card_class(card)[1],
        status=card.status,
        calls=card.calls,
        kernel_us_per_call=per_call,
        kernel_us_per_inference=None if per_call is None else round(per_call * card.calls, 3),
        dominant_kernel=card.dominant_kernel,
        problem=problem,
        stability=_stability(card),
    )


def _stability(card: Card) -> str | None:
    measured = card.measurement.stability if card.measurement else None
    return measured.verdict if measured else None


def stability_lines(cards: CardFile) -> list[str]:
    """For cards measured with --repeat: how many verdicts are stable, and each unstable one
    with the class it may flip to (nothing for cards measured once)."""
    measured = [c for c in cards.cards if c.measurement and c.measurement.stability]
    if not measured:
        return []
    unstable = [c for c in measured if _stability(c) == "unstable"]
    lines = [
        f"verdicts over repeats: {len(measured) - len(unstable)} of {len(measured)} stable,"
        f" {len(unstable)} unstable (run-to-run 95 % intervals of the deciding metrics)"
    ]
    for card in unstable:
        stability = card.measurement.stability if card.measurement else None
        lines.append(f"unstable: {card.group}: {stability.why if stability else ''}")
    return lines


def light_lines(cards: CardFile) -> list[str]:
    """For cards captured with the light list (capture --light-after): how many have no class
    and how many a class reached past a rule the list could not check, with their time, and
    the drill-down that measures them in full (nothing for a capture without light cards)."""
    light = [c for c in cards.cards if c.captured_light]
    if not light:
        return []
    unresolved = [c for c in light if _unresolved(c)]
    passed = [c for c in light if not _unresolved(c) and _past_unchecked(c)]
    return [
        f"captured light: {len(light)} cards without sm_pct and l2_pct;"
        f" {len(unresolved)} unresolved ({_us(unresolved)} us per inference),"
        f" {len(passed)} classed past a rule they could not check"
        f" ({_us(passed)} us per inference);"
        " `capture --resume --light-after 0` takes every light shape again in full,"
        " `capture --drill-down` on this file only these, with warp stalls"
    ]


def _unresolved(card: Card) -> bool:
    return card.primary == UNRESOLVED or card.status == "unresolved"


def _past_unchecked(card: Card) -> bool:
    top = dominant(card.kernels)
    return top is not None and top.margin is not None and top.margin.rival_unchecked


def _us(cards: list[Card]) -> str:
    return figure(math.fsum((c.summed_kernel_us or 0.0) * c.calls for c in cards))


def rows_for_people(cards: CardFile, by: SummaryBy = "stage") -> Rows:
    """The rows a table for people shows: those of `summarize`, but for fidelity only the
    cards more than 10 % away from the program (the CSV lists every timed card)."""
    if by == "fidelity":
        return fidelity_rows(cards, off_only=True)
    return summarize(cards, by)


def summary_notes(cards: CardFile, by: SummaryBy = "stage") -> list[str]:
    """The lines a summary for people prints after its table (plain text, not yet escaped):
    for fidelity how many cards are off, then the coverage of every stage (or that it is
    unknown)."""
    fidelity = [fidelity_line(cards)] if by == "fidelity" else []
    projected = [cards.projection.line()] if cards.projection is not None else []
    light = light_lines(cards)
    return projected + fidelity + stability_lines(cards) + light + coverage_lines(cards)


def summary_cells(
    rows: Rows, by: SummaryBy = "stage", for_people: bool = False
) -> tuple[list[str], list[list[str]]]:
    """Column names (each time column saying what it is per: `PER`) and text cells of
    `summarize(cards, by)` rows (None is empty text); for people, shares are percentages, times
    have thousands separators, and the coverage table leaves out what its lines say (basis,
    covered calls and time)."""
    names = PEOPLE_FIELDS.get(by, FIELDS[by]) if for_people else FIELDS[by]
    published = [PER[by].get(name, name) for name in names]
    text = _display if for_people else _text
    cells = [
        [text(getattr(row, n), p) for n, p in zip(names, published, strict=True)] for row in rows
    ]
    return published, cells


def summary_csv(rows: Rows, by: SummaryBy = "stage") -> str:
    """CSV text, header line first, of `summarize(cards, by)` rows; commas are quoted, numbers
    stay numbers (a negative one is no formula)."""
    pairs = list(zip(FIELDS[by], COLUMNS[by], strict=True))
    return csv_text(
        COLUMNS[by], [[_csv_value(getattr(row, n), p) for n, p in pairs] for row in rows]
    )


def _display(value: object, name: str) -> str:
    """A cell for people: a time nobody measured is `unknown`, never 0; other gaps `-`."""
    if value is None:
        return "unknown" if "us" in name.split("_") else "-"
    if name == "share_of_stage" and isinstance(value, float):
        return f"{100 * value:.1f}%"
    if "us" in name.split("_") and isinstance(value, float):
        return figure(value)  # as next and diff print it (4 significant digits past 1e12)
    if name == "coverage_pct" and isinstance(value, float):
        return f"{value:.1f}%"
    if name == "ratio" and isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _csv_value(value: object, name: str) -> object:
    if name == "share_of_stage" and isinstance(value, float):
        return f"{value:.4f}"
    return value


def _text(value: object, name: str) -> str:
    if value is None:
        return ""
    if name == "share_of_stage" and isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def summary_parquet(rows: Rows, by: SummaryBy = "stage") -> bytes:
    """The rows as Parquet (needs pyarrow), columns as in the CSV, values typed."""
    import pandas as pd

    from .tables import frame_bytes

    frame = pd.DataFrame([[getattr(r, n) for n in FIELDS[by]] for r in rows], columns=COLUMNS[by])
    return frame_bytes(frame, "parquet")
