"""Kernels of a shape the capture did not finish. A capture stopped (a time limit, SIGTERM)
while ncu profiled a shape keeps the report of what was profiled, that shape's first kernels
among them, while the manifest has the shape pending (or failed, when it failed part way).
Those kernels are no card of their own (it would read as a shape of a stage named after the
report, judged on part of its kernels); the shape's card says they were left out. The same
holds once `capture --resume` finished the shape in a later report (`all.r2`): the first
attempt's kernels stay in the older report and are left out of the card it now has. And the
repeats of a duration batch (`capture --repeat`) no shape takes are never cards: of a batch
stopped part way, or of shapes timed again in a later one."""

from __future__ import annotations

from ..capture.manifest import Manifest, ManifestShape
from ..cards.model import Card, KernelCard
from ..read.names import report_stem
from ..read.rows import KernelRow

Classified = tuple[KernelRow, KernelCard]  # a kernel row and its classified card entry
Unfinished = dict[str, dict[str, int]]  # group -> report stem -> kernels left out


def split_unfinished(
    leftovers: list[Classified], manifest: Manifest
) -> tuple[list[Classified], Unfinished]:
    """The kernels no captured shape claimed, less those of one of the manifest's shapes found
    in one of its batches' reports (a shape not captured, or captured in another report: an
    earlier attempt's); those counted per shape and report (stem). (A report the manifest
    does not name is read as a loose one.)"""
    groups = {shape.group for shape in manifest.shapes}
    reports = {report_stem(batch.report) for batch in manifest.batches if batch.report}
    kept: list[Classified] = []
    unfinished: Unfinished = {}
    for pair in leftovers:
        ranges = pair[0].nvtx_ranges
        stem = report_stem(pair[0].report)
        if ranges and ranges[-1] in groups and stem in reports:
            counts = unfinished.setdefault(ranges[-1], {})
            counts[stem] = counts.get(stem, 0) + 1
        else:
            kept.append(pair)
    return kept, unfinished


def said_unfinished(card: Card, shape: ManifestShape, unfinished: Unfinished) -> Card:
    """A shape's card saying that its kernels of an unfinished capture were left out: as its
    error where the capture stopped during it (pending), as a note beside a failure's own, or
    beside the card of the attempt that finished it (`--resume`)."""
    if card.group not in unfinished:
        return card
    where = "; ".join(
        f"{count} of its kernels are in report {stem}"
        for stem, count in sorted(unfinished[card.group].items())
    )
    if shape.status == "ok":
        note = f"{where}, left out: an earlier attempt's, which did not finish"
        return card.model_copy(update={"notes": [*card.notes, note]})
    if shape.status == "failed":
        note = f"{where}, left out: profiled before it failed"
        return card.model_copy(update={"notes": [*card.notes, note]})
    error = (
        f"not captured: the capture stopped while profiling this shape ({where}, left out);"
        " finish it with capture --resume"
    )
    return card.model_copy(update={"error": error})


def without_old_repeats(
    pairs: list[Classified], manifest: Manifest, warnings: list[str]
) -> list[Classified]:
    """Kernels no shape claims, less those of the capture's duration batches (a batch stopped
    part way, or whose shapes were timed again after a crash or --resume): repeats, never
    cards of their own; a warning per report says which."""
    times = {report_stem(b.report): b for b in manifest.batches if b.kind == "times"}
    timed = {s.group for s in manifest.shapes if s.times_status == "ok"}
    unused = [p for p in pairs if report_stem(p[0].report) in times]
    for report in sorted({p[0].report for p in unused}):
        ranges = {
            p[0].nvtx_ranges[-1] for p in unused if p[0].report == report and p[0].nvtx_ranges
        }
        if ranges <= timed:
            warnings.append(
                f"{report}: repeats of a duration batch whose shapes were timed again later;"
                " not used"
            )
            continue
        ended = times[report_stem(report)].ended_by
        warnings.append(
            f"{report}: repeats of a duration batch that did not finish"
            f"{f' ({ended})' if ended and ended != 'finished' else ''}, of shapes whose repeats"
            " are not measured (their times_status); not used: capture --resume times them"
        )
    return [p for p in pairs if report_stem(p[0].report) not in times]
