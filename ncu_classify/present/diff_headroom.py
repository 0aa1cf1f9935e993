"""The headroom part of a diff for people: per stage, the time recoverable at kernel roofs and
at the speed of light on both sides, and how much of the baseline's the change took."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..compare.model import DiffFile
from ..core.text import figure, md_text, printable


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
        pairs = [
            (one.measured_us if one else None, other.measured_us if other else None),
            (one.recoverable_at_kernel_roof_us if one else None,
             other.recoverable_at_kernel_roof_us if other else None),
            (one.recoverable_at_sol_us if one else None,
             other.recoverable_at_sol_us if other else None),
        ]  # fmt: skip
        sides = (one is not None, other is not None)
        rows.append(
            [
                row.stage,
                *(f"{_figure(a, sides[0])} -> {_figure(b, sides[1])}" for a, b in pairs),
                figure(row.saved_us),
                "beat the baseline's SOL (another math mode)"
                if row.beat_baseline_sol
                else figure(row.saved_of_sol_pct, "{:.1f} %"),
            ]
        )
    return rows


def _figure(value: float | None, side: bool) -> str:
    """A figure of one side: `-` where the side lacks the stage, `unknown` where it has the
    stage but not the figure (no card with a kernel roof or a speed of light)."""
    return figure(value) if value is not None or not side else "unknown"


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
