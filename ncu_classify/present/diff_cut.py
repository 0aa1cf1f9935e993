"""Which shapes a terminal diff lists: all of them up to SHOWN_ROWS; beyond that (two cards
files of a whole model, tens of thousands of shapes), the shapes that changed, the SHOWN_ROWS
of them with the largest change of time, in file order, and one line that says what is not
listed. The Markdown, CSV, Parquet and JSON forms always hold every shape."""

from __future__ import annotations

import math

from ..compare.model import DiffFile, ShapeDiff

SHOWN_ROWS = 500


def changed(shape: ShapeDiff) -> bool:
    """A verdict that moved (or a shape on one side only), or a time beyond noise or unsure."""
    quiet = shape.change in ("same", "within_noise", "repeat")
    return not quiet or shape.speed in ("faster", "slower", "inconclusive")


def _size(shape: ShapeDiff) -> float:
    """How much the shape's time moved (log ratio); a side without time sorts first."""
    ratio = shape.duration_ratio
    return math.inf if not ratio or ratio <= 0 else abs(math.log(ratio))


def shown_shapes(diff: DiffFile) -> tuple[list[ShapeDiff], str | None]:
    """The shapes to list, in file order, and the line for those left out (None: none)."""
    if len(diff.shapes) <= SHOWN_ROWS:
        return list(diff.shapes), None
    moved = [i for i, shape in enumerate(diff.shapes) if changed(shape)]
    kept = sorted(sorted(moved, key=lambda i: -_size(diff.shapes[i]))[:SHOWN_ROWS])
    left = len(diff.shapes) - len(kept)
    beyond = len(moved) - len(kept)
    why = "the same or within noise" + (
        f", and {beyond} smaller changes past the {SHOWN_ROWS} largest" if beyond else ""
    )
    note = (
        f"{left} of {len(diff.shapes)} shapes are not listed here ({why}); --format md, csv"
        " or json lists every shape"
    )
    return [diff.shapes[i] for i in kept], note
