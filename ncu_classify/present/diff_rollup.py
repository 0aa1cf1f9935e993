"""The per-stage-and-class roll-up of a diff for people: cards and kernel time per inference
on both sides and the change. A cell whose every card is untimed has unknown time (`unknown`),
never 0; a side without the stage shows `-` (its change `missing`)."""

from __future__ import annotations

from typing import Literal

from rich.table import Table
from rich.text import Text

from ..compare.model import DiffFile, StageRollup
from ..core.text import figure, printable

ARROW = "->"


def us_text(value: float | None, sign: bool = False) -> str:
    """Microseconds for people, as next and summary print them; a missing total is `missing`,
    never 0."""
    if value is None:
        return "missing"
    return figure(value, "{:+,.1f}" if sign else "{:,.1f}")


def us_untimed(value: float | None, untimed: int, cards: int, short: bool = False) -> str:
    """A cell's time, saying how many of its cards have none (left out of it): `+N untimed`,
    or a `*` on the terminal (explained under the table); `unknown` if none of its cards has
    a time, `-` where the side has no card of the stage."""
    if untimed and untimed == cards:
        return "unknown"
    if value is None:
        return "-"
    if not untimed:
        return us_text(value)
    return f"{us_text(value)}*" if short else f"{us_text(value)} (+{untimed} untimed)"


def rollup_change(row: StageRollup) -> str:
    """The change of a cell: `unknown` where an untimed card hides it, `missing` where a side
    has no card of the stage."""
    sides = ((row.baseline_us, row.baseline_cards), (row.candidate_us, row.candidate_cards))
    absent = any(us is None and not cards for us, cards in sides)
    return "unknown" if row.delta_us is None and not absent else us_text(row.delta_us, True)


def rollup_table(diff: DiffFile) -> Table:
    """The roll-up for a terminal: a row per class under a row per stage (a stage column
    would fold the stage names at 80 columns), class names whole."""
    rollup = Table(title="per stage and class: cards and kernel time per inference (us)")
    for name in ("class", "cards", "baseline\nus", "candidate\nus", "change\nus"):
        justify: Literal["left", "right"] = "left" if name == "class" else "right"
        rollup.add_column(name, overflow="fold", justify=justify, no_wrap=True)
    stage, starred = None, False
    for row in diff.rollup:
        if row.stage != stage:
            stage = row.stage
            rollup.add_row(Text(printable(f"[{stage}]"), style="bold", overflow="fold"))
        times = [
            us_untimed(row.baseline_us, row.baseline_untimed, row.baseline_cards, short=True),
            us_untimed(row.candidate_us, row.candidate_untimed, row.candidate_cards, short=True),
        ]
        starred = starred or any(t.endswith("*") for t in times)
        cards = f"{row.baseline_cards} {ARROW} {row.candidate_cards}"
        cells = [row.primary, cards, *times, rollup_change(row)]
        rollup.add_row(*(Text(printable(c)) for c in cells))
    if starred:
        rollup.caption = "* some cards of the cell have no time; their time is not in the sum"
    return rollup
