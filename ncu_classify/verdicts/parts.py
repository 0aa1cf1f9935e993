"""A capture read in part: reports of a capture folder given as files (`classify raw/vae.ncu-rep`)
are read with the `manifest.json` beside them where it names them. Their cards are those of the
manifest's shapes that live in these reports (the shape's record names one, its repeats are in
one, or a stopped capture left its first kernels in one), with all the manifest gives a card
(stage, calls, the recording's real time, the unfinished shape's error). The capture's other
reports and shapes were not asked for: they make no card, no missing-report or missing-shard
error, and coverage counts the stages these cards belong to, nothing more. A report that the
manifest names nowhere stays a loose report."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..capture.manifest import MANIFEST_NAME, Manifest, ManifestShape
from ..cards.model import Card
from ..read.names import report_stem
from .unfinished import Classified


def manifest_beside(report: Path) -> Path | None:
    """The capture manifest in the folder of a report given as a file, or None (whether it
    names the report is known once it is read)."""
    beside = report.parent / MANIFEST_NAME
    return beside if beside.exists() or beside.is_symlink() else None


def named_stems(manifest: Manifest) -> set[str]:
    """The stem of every report a manifest names: its batches' and its shapes' (a shape's
    report and the report of its repeats)."""
    named = {report_stem(b.report) for b in manifest.batches}
    for shape in manifest.shapes:
        named |= {report_stem(n) for n in (shape.report, shape.times_report) if n}
    return named


def part_warning(report: Path, named: set[str]) -> str:
    """The warning of a report given as a file beside a capture manifest: read as a part of
    that capture, or, where the manifest names it nowhere, as a loose report."""
    if report_stem(report) not in named:
        return (
            f"{report}: in a capture folder whose manifest.json names it nowhere: read as a"
            " loose report"
        )
    return (
        f"{report}: read as part of the capture in its folder (its manifest.json), with only"
        " its own shapes: classify the folder for the whole capture"
    )


def unreadable_manifest(report: Path, why: str) -> str:
    """The warning of a report given as a file beside a manifest that cannot be read."""
    return f"{report}: the {MANIFEST_NAME} beside it cannot be read ({why}): read as a loose report"


def own_shapes(
    manifest: Manifest, reports: Iterable[Path], pairs: Iterable[Classified]
) -> list[ManifestShape]:
    """The shapes of a capture read in part, in manifest order: those whose record names one of
    `reports`, whose measured repeats are in one, or whose kernels are in one of its counter
    batches' reports (a shape the capture did not finish, or finished in a later report)."""
    given = {report_stem(p) for p in reports}
    counters = {report_stem(b.report) for b in manifest.batches if b.kind != "times"} & given
    found = {
        row.nvtx_ranges[-1]
        for row, _ in pairs
        if row.nvtx_ranges and report_stem(row.report) in counters
    }
    return [
        shape
        for shape in manifest.shapes
        if (shape.report and report_stem(shape.report) in given)
        or (shape.times_status == "ok" and report_stem(shape.times_report or "") in given)
        or shape.group in found
    ]


def not_given(shape: ManifestShape) -> str:
    """The error of a shape's card in a capture read in part whose report is not among those
    given (only its repeats, or an earlier attempt's kernels, are)."""
    return (
        f"its report {shape.report} was not given, only other reports of its capture: give it"
        " too, or classify the capture folder"
    )


def repeats_not_given(card: Card, shape: ManifestShape, reports: Iterable[Path]) -> Card | None:
    """The card of a shape in a capture read in part with a note where its repeats are in a
    report that was not given (without it, the card is its first launch alone, not a spread
    whose repeats went missing); None where its repeats were given or it has none."""
    if card.error or shape.times_status != "ok" or not shape.times_report:
        return None
    if report_stem(shape.times_report) in {report_stem(p) for p in reports}:
        return None
    note = (
        f"its repeats are in report {report_stem(shape.times_report)}, not given: the card is"
        " its first launch alone (give that report too for their spread)"
    )
    return card.model_copy(update={"notes": [*card.notes, note]})
