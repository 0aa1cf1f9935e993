"""Capture folders read without their `manifest.json` (reports copied without it).

Their reports still name each shape by the group id of its NVTX range, so their cards keep the
shape's stage, op, parameters and nominal work; everything else the manifest held is gone, and
classify says so once per folder. A drill-down folder without its manifest is still one: its
shapes are group ids whose every kernel holds the warp-state counters, so it still merges into
the cards it drills, named after its folder.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ..cards.coverage import WITHOUT_MANIFEST
from ..cards.model import Card
from ..core.text import counted
from .group_ids import parse_group_id
from .inputs import ReportSet

# What a capture's cards lose with its manifest, in the order a reader of the cards misses it.
LOST = (
    "calls per inference (each card counts once)",
    "each shape's backend, inputs and note",
    "its failed and missing shapes and their order",
    "the machine it ran on",
    "the recorded program's real time (coverage)",
    "the spread of --repeat launches",
)
SetCards = tuple[ReportSet, list[Card]]


def is_shape_card(card: Card) -> bool:
    """True for a card named by one of capture's group ids (not a user's range or kernel)."""
    return parse_group_id(card.group) is not None


def without_manifest(report_set: ReportSet, cards: list[Card]) -> Path | None:
    """The folder of `report_set` where it is a folder searched that holds cards of a capture's
    shapes but no manifest.json; None otherwise (reports given by name are loose on purpose)."""
    if report_set.manifest_path is not None or report_set.folder is None:
        return None
    return report_set.folder if any(is_shape_card(c) for c in cards) else None


def unmanifested_drill_down(report_set: ReportSet, cards: list[Card]) -> Path | None:
    """The folder of a drill-down capture read without its manifest: every card a shape whose
    every kernel holds the drill-down counters; None for anything else."""
    folder = without_manifest(report_set, cards)
    if folder is None or not cards:
        return None
    drilled = all(
        is_shape_card(c) and c.kernels and all(k.drill_down is not None for k in c.kernels)
        for c in cards
    )
    return folder if drilled else None


def is_drill_down(report_set: ReportSet, cards: list[Card]) -> bool:
    """True for a drill-down capture, read with its manifest or without it."""
    if report_set.manifest is not None:
        return report_set.manifest.drill_down is not None
    return unmanifested_drill_down(report_set, cards) is not None


def missing_manifest_warnings(per_set: list[SetCards], failed: Collection[Path] = ()) -> list[str]:
    """One warning per capture folder read without its manifest: what that loses, and how a
    drill-down among the inputs merges without it. It counts the reports read (not those in
    `failed`) and the distinct shapes their cards hold (two copies of a report, one shape)."""
    drills = {id(s) for s, cards in per_set if is_drill_down(s, cards)}
    lines = []
    for report_set, cards in per_set:
        folder = without_manifest(report_set, cards)
        if folder is None:
            continue
        shapes = len({c.group for c in cards if is_shape_card(c)})
        reports = sum(1 for report in report_set.reports if report not in failed)
        line = (
            f"{folder}: {counted(reports, 'report')} of a capture ({counted(shapes, 'shape')}"
            f" by the group ids of their NVTX ranges) {WITHOUT_MANIFEST}; lost with it:"
            f" {', '.join(LOST)}"
        )
        if id(report_set) in drills:
            line += (
                "; read as a drill-down (every kernel holds its counters), merged by kernel"
                " names alone"
            )
        elif drills:
            line += (
                "; the drill-down merges into its cards by kernel names alone (backends unknown)"
            )
        lines.append(line)
    return lines
