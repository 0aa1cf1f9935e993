"""Tables that never alter a figure: the column widths of a rich table chosen here, not by rich
(whose last resort cuts every column evenly, figures and headers included, without a mark).

On a terminal a table that does not fit first folds the columns of free text and ids and wraps
the others between words (widest first), then folds class names; a figure and a header word
stay whole. Where even that does not fit, the table is drawn wider than the terminal rather
than cut. Off a terminal (a file, a pipe, a CI log) a table is drawn as wide as it needs: ids
whole, one line per row.

`Stacked` is the other fitter, for tables of plain-text cells (`next`): a numeric column is as
wide as its widest figure (its header wraps to that width), text columns fold, and a terminal
too narrow for the figures gets each row as a block of `header: value` lines instead.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Collection
from typing import Literal

from rich import box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..core.text import one_line, printable

FOLD_FLOOR = 8  # a column of ids or free text folds no narrower than this (or its header word)
_WIDE = 1_000_000  # the width a cell is measured at (its natural width), and off a terminal


class Fitted:
    """`table` drawn with every figure whole: the columns whose header is in `fold` (ids, free
    text) may fold anywhere; the right-justified ones (figures) wrap only between words, never
    inside one; the others (class names) fold only where nothing else would fit. A cell made as
    `Text(..., overflow="fold")` (a stage heading row) may fold in any column and does not
    widen it."""

    def __init__(self, table: Table, fold: Collection[str] = ()) -> None:
        self.table = table
        self.fold = [str(column.header) in fold for column in table.columns]
        for column in table.columns:
            column.no_wrap = False  # widths are chosen here; a header may wrap between words
            column.overflow = "fold"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The table at the widths of `widths` (wider than `options` allow where it must)."""
        widths = self.widths(console, options)
        table = self.table
        saved: list[int | None] = [column.width for column in table.columns]
        for column, width in zip(table.columns, widths, strict=True):
            column.width = width
        wide = options.update_width(max(options.max_width, self._total(widths)))
        try:  # rendered at once: the widths are the table's only while it is drawn
            lines = list(console.render(table, wide))
        finally:
            for column, old in zip(table.columns, saved, strict=True):
                column.width = old
        yield from lines

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the fitted table (which may be wider than `options` allow)."""
        width = self._total(self.widths(console, options))
        return Measurement(width, width)

    def _total(self, widths: list[int]) -> int:
        """The table's width for these content widths: with padding and borders."""
        pads = sum(map(self.table._get_padding_width, range(len(widths))))
        return sum(widths) + pads + self.table._extra_width

    def widths(self, console: Console, options: ConsoleOptions) -> list[int]:
        """The content width of each column: its natural width off a terminal or where the
        table fits; else, widest first, the fold columns shrunk to their floor and the others
        to their longest word (headers wrap), then the word columns folded to their floor
        too. A figure column (right-justified) never shrinks below its widest figure."""
        natural, words, floors = self._measure(console, options)
        if not on_terminal(console):
            return natural
        table = self.table
        widths = list(natural)
        excess = self._total(widths) - options.max_width
        # widest first: ids and free text fold to their floor, the others wrap between words
        soft = [f if fold else w for f, w, fold in zip(floors, words, self.fold, strict=True)]
        excess = _shrink(widths, soft, list(range(len(widths))), excess)
        wording = [i for i, c in enumerate(table.columns) if c.justify != "right"]
        _shrink(widths, floors, wording, excess)  # then class names fold too; figures never
        return widths

    def _measure(
        self, console: Console, options: ConsoleOptions
    ) -> tuple[list[int], list[int], list[int]]:
        """Each column's natural width (its widest cell or header), its longest word (and
        header word), and its floor: the longest header word, and for a figure column its
        longest word, for the others the narrower of FOLD_FLOOR and its natural width."""
        wide = options.update_width(_WIDE)
        natural, words, floors = [], [], []
        for column in self.table.columns:
            header = Measurement.get(console, wide, column.header)
            cells = [Measurement.get(console, wide, c) for c in column.cells]
            word = max(
                [header.minimum]
                + [m.minimum for m, c in zip(cells, column.cells, strict=True) if not _folds(c)]
            )
            natural.append(max([header.maximum, *(m.maximum for m in cells)]))
            words.append(word)
            figures = column.justify == "right"
            floors.append(word if figures else max(header.minimum, min(natural[-1], FOLD_FLOOR)))
        return natural, words, floors


class Line:
    """A line of free text (a note, a warning, a coverage line): on a terminal wrapped between
    words to its width (a word wider than the terminal folds), so that the terminal never cuts
    a figure in two; off a terminal one line, as long as it is."""

    def __init__(self, text: str | Text) -> None:
        self.text = Text(text) if isinstance(text, str) else text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The text wrapped to `options` on a terminal, else unwrapped."""
        text = self.text.copy()
        wrap = on_terminal(console)
        text.no_wrap, text.overflow = not wrap, "fold" if wrap else "ignore"
        yield from console.render(text, options.update(no_wrap=not wrap, overflow=text.overflow))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the text's longest line (its longest word at the least)."""
        return Measurement.get(console, options, self.text)


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


class Stacked:
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
        yield Line(one_line(self.title))
        yield self.table()

    def needed(self, console: Console) -> int:
        """The width of the table with every column at its least width."""
        table = self.table()
        for column, width in zip(table.columns, self.widths(), strict=True):
            column.width = width
        return Measurement.get(console, console.options.update_width(10**6), table).maximum


def plain_text(draw: Callable[[Console], object]) -> str:
    """What `draw` prints on a console off a terminal (no colour, tables at the width they
    need), as text: the -o FILE form of a table."""
    buffer = io.StringIO()
    draw(Console(file=buffer, color_system=None, soft_wrap=True, force_terminal=False))
    return buffer.getvalue()


def on_terminal(console: Console) -> bool:
    """Whether `console` draws on a terminal: as its maker forced it, else whether its file is
    a tty. FORCE_COLOR or TTY_COMPATIBLE (colour in a CI log) make no terminal of a file: a
    log gets the table at the width it needs, as a file does."""
    forced: bool | None = getattr(console, "_force_terminal", None)  # force_terminal=
    if forced is not None:
        return forced
    isatty = getattr(console.file, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed file
        return False


def _folds(cell: RenderableType) -> bool:
    """A cell that may fold anywhere whatever its column (a stage heading row)."""
    return isinstance(cell, Text) and cell.overflow == "fold"


def _shrink(widths: list[int], floors: list[int], group: list[int], excess: int) -> int:
    """Take `excess` columns from the `group` columns, one at a time from the widest (the
    first among equals), none below its floor; returns what is still in excess."""
    while excess > 0:
        open_ = [i for i in group if widths[i] > floors[i]]
        if not open_:
            break
        widest = max(open_, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return excess
