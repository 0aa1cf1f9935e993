"""The headroom part of a diff for people: per stage, the time recoverable at kernel roofs and
at the speed of light on both sides, and how much of the baseline's the change took."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..cards.headroom import StageTotals
from ..compare.model import DiffFile
from ..core.text import figure, md_text, printable
from .next_text import stage_cells


def headroom_markdown(diff: DiffFile) -> list[str]:
    """Markdown lines of the headroom table (none when neither side has timed cards)."""
    if not diff.headroom:
        return []
    lines = [
        "",
        "### Headroom per stage (us per inference)",
        "",
        "| stage | measured | recoverable at kernel roofs | recoverable at speed of light |"
        " saved | share of the baseline's speed-of-light headroom |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for cells in headroom_rows(diff):
        lines.append(f"| {md_text(cells[0])} | {' | '.join(cells[1:])} |")
    return lines


def headroom_rows(diff: DiffFile) -> list[list[str]]:
    """The headroom table's cells, one row per stage (shared by Markdown and the terminal)."""
    rows = []
    for row in diff.headroom:
        one, other = row.baseline, row.candidate
        # a recoverable figure is the shown measured minus the shown floor, as `next` prints it
        sides = [_side(one), _side(other)]
        rows.append(
            [
                row.stage,
                *(f"{a} -> {b}" for a, b in zip(*sides, strict=True)),
                figure(row.saved_us),
                "beat the baseline's SOL (another math mode)"
                if row.beat_baseline_sol
                else figure(row.saved_of_sol_pct, "{:.1f} %"),
            ]
        )
    return rows


def _side(totals: StageTotals | None) -> list[str]:
    """One side's measured time and its recoverable time at kernel roofs and at SOL, as
    `next` prints them (`present.next_text`): `-` three times where the side lacks the stage,
    `unknown` where it has the stage but not the figure."""
    if totals is None:
        return ["-"] * 3
    cells = stage_cells(totals)  # stage, cards, measured, at roofs, recoverable, at SOL, ...
    return [cells[2], cells[4], cells[6]]


def headroom_table(diff: DiffFile) -> Table | None:
    """The headroom per stage as a terminal table; None when neither side has timed cards."""
    if not diff.headroom:
        return None
    table = Table(title="headroom per stage (us per inference): baseline -> candidate")
    for name in HEADERS:
        table.add_column(name, overflow="fold", justify="left" if name == "stage" else "right")
    for cells in headroom_rows(diff):
        table.add_row(*(Text(printable(c)) for c in cells))
    return table


HEADERS = ["stage", "measured", "recoverable at kernel roofs", "recoverable at speed of light",
           "saved", "share of the baseline's SOL headroom"]  # fmt: skip
