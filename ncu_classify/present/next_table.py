"""The `next` advice on a terminal: the stage table and the top moves of each stage as tables
like summary's and diff's (plain text cells, never markup; Markdown only with `-o F.md`).
Figures are never cut: the tables are `fit.Stacked` (a terminal too narrow for the figures gets
each row as a block of `header: value` lines instead)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from ..core.text import one_line, printable
from .fit import Line, Stacked, plain_text
from .next_moves import NextMoves
from .next_text import (
    INTRO,
    MOVE_HEADERS,
    STAGE_HEADERS,
    coverage_lines,
    flag_lines,
    move_cells,
    stage_cells,
    stage_moves,
    stage_notes,
)


def next_renderable(advice: NextMoves, top: int = 5) -> RenderableType:
    """The stage table, its notes and coverage, the top moves of each stage, the flags."""
    # user text escaped to one line first: a newline in a cell is then only ever one of ours
    stages = [list(map(one_line, stage_cells(s))) for s in [*advice.stages, advice.overall]]
    parts: list[RenderableType] = [
        _folded(INTRO),
        Stacked(
            f"headroom: {printable(advice.cards_file)} (us per inference)",
            STAGE_HEADERS,
            stages,
            set(range(1, len(STAGE_HEADERS))),
        ),
        *map(_folded, [*stage_notes(advice), *coverage_lines(advice)]),
    ]
    for name, moves in stage_moves(advice, top):
        rows = []
        for m in moves:
            c = move_cells(m)
            klass = f"{c[2]}; {c[3]}" if c[3] != "-" else c[2]
            # the shape, its class and hot unit, and what to try share one folding column
            what, *measured = c[8].split(" | ", 1)  # the measured part reads "measured: ..."
            lines = (c[1], klass, f"try: {what}", *measured)
            rows.append([c[0], "\n".join(map(one_line, lines)), *c[4:8]])
        parts.append(Text(""))
        parts.append(
            Stacked(
                f"next moves: {printable(name)}",
                ["rank", "shape; class; hot unit; try", *MOVE_HEADERS[4:8]],
                rows,
                {0, 2, 3, 4, 5},
            )
        )
    flagged = flag_lines(advice)
    if flagged:
        parts += [Text(""), Text("flagged figures:"), *(_folded(f"- {f}") for f in flagged)]
    return Group(*parts)


def _folded(line: str) -> Line:
    """A line of text wrapped at spaces to a terminal's width (its soft wrap would cut a
    figure in two); one line off a terminal."""
    return Line(one_line(line))


def next_table_text(advice: NextMoves, top: int = 5) -> str:
    """The tables as plain text off a terminal (a pipe, `-o -`, `-o F.txt`): at the width they
    need, ids whole, no trailing spaces."""
    text = plain_text(lambda console: console.print(next_renderable(advice, top)))
    return "".join(line.rstrip() + "\n" for line in text.splitlines())
