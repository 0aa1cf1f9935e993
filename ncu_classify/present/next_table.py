"""The `next` report on a terminal: the stage table and the top moves of each stage as tables
like summary's and diff's (plain text cells, never markup; Markdown only with `-o F.md`).
Figures are never cut: a numeric column is as wide as its widest figure (its header wraps to
that width), text columns fold, and a terminal too narrow for the figures gets each row as a
block of `header: value` lines instead."""

from __future__ import annotations

import io
from typing import Literal

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..core.text import one_line, printable
from .fit import Line, on_terminal
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

_WIDE = 1_000_000  # the width off a terminal: a table as wide as it needs


def _wrapped(header: str, width: int) -> str:
    """A header's words on lines no wider than `width` (a longer word on a line of its own)."""
    lines: list[str] = []
    for word in header.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def _cell(cell: str) -> Text:
    """User text shown escaped, line by line (a cell may hold several lines)."""
    return Text("\n".join(map(printable, cell.split("\n"))))


class _Fitted:
    """A table where it fits the width, else each row as a block of `header: value` lines:
    a figure is never cut nor folded."""

    def __init__(self, title: str, headers: list[str], rows: list[list[str]], numeric: set[int]):
        """`rows` of plain-text cells (a newline: another line of the cell); `numeric`: the
        indexes of the columns of figures."""
        self.title, self.headers, self.rows, self.numeric = title, headers, rows, numeric

    def widths(self) -> list[int]:
        """Each column's least width: a numeric one its widest figure and longest header word,
        a text one (folding) up to 16 characters."""
        out = []
        for index, name in enumerate(self.headers):
            cells = [line for row in self.rows for line in row[index].split("\n")]
            longest = max(map(len, [*cells, *name.split()]))
            out.append(longest if index in self.numeric else min(longest, 16))
        return out

    def natural(self) -> list[int]:
        """Each column's natural width: its widest line, header included (off a terminal)."""
        return [
            max(len(name), *(len(line) for row in self.rows for line in row[index].split("\n")))
            for index, name in enumerate(self.headers)
        ]

    def table(self, whole: bool = False) -> Table:
        """The table: numeric columns never narrower than their widest figure; `whole`: every
        column at its natural width, nothing wrapped nor folded (off a terminal)."""
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
        table.show_edge = not whole  # off a terminal: no edge of spaces around the table
        for index, (name, width) in enumerate(zip(self.headers, self.widths(), strict=True)):
            if whole:
                justify: Literal["left", "right"] = "right" if index in self.numeric else "left"
                table.add_column(name, justify=justify, no_wrap=True, width=self.natural()[index])
            elif index in self.numeric:
                table.add_column(
                    _wrapped(name, width), justify="right", no_wrap=True, min_width=width
                )
            else:
                table.add_column(name, overflow="fold", min_width=width)
        for row in self.rows:
            table.add_row(*map(_cell, row))
        return table

    def blocks(self) -> Table:
        """Each row as lines `header: value` under its first cell, in one folding column."""
        grid = Table.grid()
        grid.add_column(overflow="fold")
        grid.add_row(Text(one_line(self.title)))
        for row in self.rows:
            grid.add_row(_cell(f"{self.headers[0]} {row[0]}"))
            for name, value in zip(self.headers[1:], row[1:], strict=True):
                grid.add_row(_cell("  " + "\n  ".join(f"{name}: {value}".split("\n"))))
        return grid

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Off a terminal the table at its natural width; on one the table where it fits,
        else the blocks."""
        if not on_terminal(console):
            yield Line(self.title)
            wide = options.update(width=_WIDE, no_wrap=True)  # never folded: as wide as it needs
            yield from console.render(self.table(whole=True), wide)
            return
        if self.needed(console) > options.max_width:
            yield self.blocks()
            return
        yield _folded(self.title)
        yield self.table()

    def needed(self, console: Console) -> int:
        """The width of the table with every column at its least width."""
        table = self.table()
        for column, width in zip(table.columns, self.widths(), strict=True):
            column.width = width
        return Measurement.get(console, console.options.update_width(10**6), table).maximum


def next_renderable(report: NextMoves, top: int = 5) -> RenderableType:
    """The stage table, its notes and coverage, the top moves of each stage, the flags."""
    # user text escaped to one line first: a newline in a cell is then only ever one of ours
    stages = [list(map(one_line, stage_cells(s))) for s in [*report.stages, report.overall]]
    parts: list[RenderableType] = [
        _folded(INTRO),
        _Fitted(
            f"headroom: {printable(report.cards_file)} (us per inference)",
            STAGE_HEADERS,
            stages,
            set(range(1, len(STAGE_HEADERS))),
        ),
        *map(_folded, [*stage_notes(report), *coverage_lines(report)]),
    ]
    for name, moves in stage_moves(report, top):
        rows = []
        for m in moves:
            c = move_cells(m)
            klass = f"{c[2]}; {c[3]}" if c[3] != "-" else c[2]
            # the shape, its class and hot unit, and what to try share one folding column
            rows.append([c[0], "\n".join(map(one_line, (c[1], klass, f"try: {c[8]}"))), *c[4:8]])
        parts.append(Text(""))
        parts.append(
            _Fitted(
                f"next moves: {printable(name)}",
                ["rank", "shape; class; hot unit; try", *MOVE_HEADERS[4:8]],
                rows,
                {0, 2, 3, 4, 5},
            )
        )
    flagged = flag_lines(report)
    if flagged:
        parts += [Text(""), Text("flagged figures:"), *(_folded(f"- {f}") for f in flagged)]
    return Group(*parts)


def _folded(line: str) -> Line:
    """A line of text wrapped at spaces to a terminal's width (its soft wrap would cut a
    figure in two); one line off a terminal."""
    return Line(one_line(line))


def next_table_text(report: NextMoves, top: int = 5) -> str:
    """The tables as plain text off a terminal (a pipe, `-o -`, `-o F.txt`): at the width they
    need, ids whole, no trailing spaces."""
    buffer = io.StringIO()
    console = Console(file=buffer, color_system=None, soft_wrap=True, force_terminal=False)
    console.print(next_renderable(report, top))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())
