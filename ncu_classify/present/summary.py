"""Summaries of a CardFile: per stage (cards per class and their share of kernel time) or per
shape (one row per card, with why a failed or incomplete card has no class)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Literal, overload

from ..cards.model import Card, CardFile, card_class
from ..core.ordering import stage_order
from .tables import csv_text

SummaryBy = Literal["stage", "shape"]


@dataclass(frozen=True)
class SummaryRow:
    """One (stage, class) cell: how many cards, and their summed kernel time."""

    stage: str
    primary: str
    cards: int
    calls: int  # runs per inference of these cards' shapes (1 each unless recorded)
    kernel_us: float  # summed kernel time x calls of the cards that have a total
    share_of_stage: float | None  # of the stage's kernel time; None if no time known
    untimed: int = 0  # cards without a total (failed, or a kernel without a duration)


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


COLUMNS: dict[SummaryBy, list[str]] = {
    "stage": [f.name for f in fields(SummaryRow)],
    "shape": [f.name for f in fields(ShapeRow)],
}


@overload
def summarize(cards: CardFile, by: Literal["stage"] = ...) -> list[SummaryRow]: ...
@overload
def summarize(cards: CardFile, by: Literal["shape"]) -> list[ShapeRow]: ...
def summarize(cards: CardFile, by: SummaryBy = "stage") -> list[SummaryRow] | list[ShapeRow]:
    """Rows per stage and class (stages in `stage_order`, most time first) or per card (in the
    file's order)."""
    if by == "shape":
        return [shape_row(card) for card in cards.cards]
    return by_stage(cards.cards)


def by_stage(cards: Sequence[Card]) -> list[SummaryRow]:
    """Cards and kernel time per inference (summed kernel time x calls) per (stage, class),
    computed with pandas; a card without a class counts under its status. Stages in
    `stage_order` (first-seen, numbered ones in numeric order), most time first within one.
    One groupby and one sort: linear in the cards, however many stages."""
    import pandas as pd

    frame = pd.DataFrame(
        [(*card_class(card), card.summed_kernel_us, card.calls) for card in cards],
        columns=["stage", "primary", "us", "calls"],
    ).astype({"us": "float64", "calls": "int64"})
    frame["untimed"] = frame["us"].isna().astype("int64")
    frame["us"] = frame["us"] * frame["calls"]
    cells = (
        frame.groupby(["stage", "primary"], sort=False)
        .agg(
            size=("us", "size"),
            sum=("us", "sum"),
            untimed=("untimed", "sum"),
            calls=("calls", "sum"),
        )
        .reset_index()
    )
    position = {stage: i for i, stage in enumerate(stage_order(cells["stage"]))}
    cells["position"] = cells["stage"].map(position)
    cells["total"] = cells.groupby("stage", sort=False)["sum"].transform("sum")
    cells["neg"] = -cells["sum"]
    cells = cells.sort_values(["position", "neg", "primary"], kind="stable")
    columns = ["stage", "primary", "size", "calls", "sum", "untimed", "total"]
    return [
        SummaryRow(
            str(stage),
            str(primary),
            int(count),
            int(calls),
            round(float(us), 3),
            us / total if total else None,
            int(untimed),
        )
        for stage, primary, count, calls, us, untimed, total in cells[columns].itertuples(
            index=False
        )
    ]


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
    rows: list[SummaryRow] | list[ShapeRow], by: SummaryBy = "stage", for_people: bool = False
) -> tuple[list[str], list[list[str]]]:
    """Column names and text cells of `summarize(cards, by)` rows (None is empty text); for
    people, shares are percentages and times have thousands separators."""
    names = COLUMNS[by]
    text = _display if for_people else _text
    return names, [[text(getattr(row, name), name) for name in names] for row in rows]


def summary_csv(rows: list[SummaryRow] | list[ShapeRow], by: SummaryBy = "stage") -> str:
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


def summary_parquet(rows: list[SummaryRow] | list[ShapeRow], by: SummaryBy = "stage") -> bytes:
    """The rows as Parquet (needs pyarrow), columns as in the CSV, values typed."""
    import pandas as pd

    from .tables import frame_bytes

    frame = pd.DataFrame([[getattr(r, n) for n in COLUMNS[by]] for r in rows], columns=COLUMNS[by])
    return frame_bytes(frame, "parquet")
