"""Kernels of a shape the capture did not finish: a capture stopped (a time limit, SIGTERM)
while ncu was profiling a shape keeps the report of what was profiled, the unfinished shape's
first kernels among them, while the manifest has that shape pending (or failed, when
it failed part way). Those kernels are not a
card of their own (they would read as a shape of a stage named after the report, judged on
part of its kernels); the shape's card says they were left out."""

from __future__ import annotations

from ..capture.manifest import Manifest
from ..cards.model import Card, KernelCard
from ..read.names import report_stem
from ..read.rows import KernelRow

Classified = tuple[KernelRow, KernelCard]


def split_unfinished(
    leftovers: list[Classified], manifest: Manifest
) -> tuple[list[Classified], dict[str, tuple[int, str]]]:
    """The kernels no captured shape claimed, less those of a shape the manifest has not
    captured found in one of its batches' reports; those counted per shape, with the report
    (stem) they are in. (A report the manifest does not name is read as a loose one.)"""
    groups = {shape.group for shape in manifest.shapes if shape.status != "ok"}
    reports = {report_stem(batch.report) for batch in manifest.batches if batch.report}
    kept: list[Classified] = []
    unfinished: dict[str, tuple[int, str]] = {}
    for pair in leftovers:
        ranges = pair[0].nvtx_ranges
        if ranges and ranges[-1] in groups and report_stem(pair[0].report) in reports:
            count, _ = unfinished.get(ranges[-1], (0, ""))
            unfinished[ranges[-1]] = (count + 1, report_stem(pair[0].report))
        else:
            kept.append(pair)
    return kept, unfinished


def said_unfinished(card: Card, unfinished: dict[str, tuple[int, str]]) -> Card:
    """A shape's card saying that its kernels of an unfinished capture were left out: as its
    error where the capture stopped during it (pending), as a note beside a failure's own."""
    if card.group not in unfinished or card.status == "classified":
        return card
    count, stem = unfinished[card.group]
    where = f"{count} of its kernels are in report {stem}, left out"
    if card.error is not None and not card.error.startswith("not captured: the capture stopped"):
        return card.model_copy(
            update={"notes": [*card.notes, f"{where}: profiled before it failed"]}
        )
    error = (
        f"not captured: the capture stopped while profiling this shape ({where});"
        " finish it with capture --resume"
    )
    return card.model_copy(update={"error": error})
