"""Summaries of a CardFile: per stage (cards per class and their share of kernel time), per
stage by each kernel's own class (a card's transposes and bias add under their own class, not
under its dominant kernel's), or per shape (one row per card, with why a failed or incomplete
card has no class)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, overload

from ..cards.model import Card, CardFile
from ..cards.rollup import KernelClassRow, SummaryRow, by_kernel_class, by_stage, card_class
from .tables import csv_text

SummaryBy = Literal["stage", "kernel", "shape"]


@dataclass(frozen=True)
class ShapeRow:
    """One card: its class (or status when it has none), time, dominant kernel and problem."""

    stage: str
    group: str
    primary: str
    status: str
    kernel_us: float | None
    dominant_kernel: str | None
    problem: str | None  # error of a failed card, notes of an incomplete one


Rows = list[SummaryRow] | list[KernelClassRow] | list[ShapeRow]
COLUMNS: dict[SummaryBy, list[str]] = {
    "stage": [f.name for f in fields(SummaryRow)],
    "kernel": [f.name for f in fields(KernelClassRow)],
    "shape": [f.name for f in fields(ShapeRow)],
}


@overload
def summarize(cards: CardFile, by: Literal["stage"] = ...) -> list[SummaryRow]: ...
@overload
def summarize(cards: CardFile, by: Literal["kernel"]) -> list[KernelClassRow]: ...
@overload
def summarize(cards: CardFile, by: Literal["shape"]) -> list[ShapeRow]: ...
def summarize(cards: CardFile, by: SummaryBy = "stage") -> Rows:
    """Rows per stage and card class or kernel class (stages in `stage_order`, most time
    first) or per card (in the file's order)."""
    if by == "shape":
        return [shape_row(card) for card in cards.cards]
    if by == "kernel":
        return by_kernel_class(cards.cards)
    return by_stage(cards.cards)


def shape_row(card: Card) -> ShapeRow:
    """The per-shape row of one card."""
    problem = None
    if card.status in ("failed", "incomplete"):
        problem = "; ".join([card.error] if card.error else card.notes) or None
    return ShapeRow(
        stage=card.stage,
        group=card.group,
        primary=card_class(card)[1],
        status=card.status,
        kernel_us=card.summed_kernel_us,
        dominant_kernel=card.dominant_kernel,
        problem=problem,
    )


def summary_cells(
    rows: Rows, by: SummaryBy = "stage", for_people: bool = False
) -> tuple[list[str], list[list[str]]]:
    """Column names and text cells of `summarize(cards, by)` rows (None is empty text); for
    people, shares are percentages and times have thousands separators."""
    names = COLUMNS[by]
    text = _display if for_people else _text
    return names, [[text(getattr(row, name), name) for name in names] for row in rows]


def summary_csv(rows: Rows, by: SummaryBy = "stage") -> str:
    """CSV text, header line first, of `summarize(cards, by)` rows; commas are quoted."""
    names, cells = summary_cells(rows, by)
    return csv_text(names, cells)


def _display(value: object, name: str) -> str:
    if value is None:
        return "-"
    if name == "share_of_stage" and isinstance(value, float):
        return f"{100 * value:.1f}%"
    if name == "kernel_us" and isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


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

    frame = pd.DataFrame([[getattr(r, n) for n in COLUMNS[by]] for r in rows], columns=COLUMNS[by])
    return frame_bytes(frame, "parquet")
