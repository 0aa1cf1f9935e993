"""Drill-down captures: the shapes a cards file left unsettled, captured again with the
warp-state counters (`core.stalls`) beside the card metrics.

Which cards need it is decided from the cards (`cards.selection`, by the CLI); capture is handed
the chosen group ids with the reason for each, keeps only those shapes of the shapes file, and
records the request in its manifest so that classify knows the folder for a drill-down of
another capture's cards.
"""

from __future__ import annotations

from ..core.errors import UsageError
from ..core.metrics import capture_metric_names
from ..core.stalls import drill_metric_names
from ..shapes.file import ShapeEntry
from .manifest import DrillRequest


def capture_metrics(drill: DrillRequest | None) -> list[str]:
    """The `--metrics` list of a capture: the card metrics, plus the drill-down counters."""
    names = capture_metric_names()
    return names + [n for n in drill_metric_names() if n not in names] if drill else names


def drill_entries(entries: list[ShapeEntry], drill: DrillRequest | None) -> list[ShapeEntry]:
    """The entries a drill-down keeps, in file order (all of them without one)."""
    return entries if drill is None else [e for e in entries if e.group in drill.selected]


def resolve_drill(drill: DrillRequest | None, groups: set[str]) -> DrillRequest | None:
    """The request with the groups the shapes file lacks moved to `not_in_shapes`; one that
    keeps none is refused, since it would capture nothing."""
    if drill is None:
        return None
    missing = sorted(g for g in drill.selected if g not in groups)
    if drill.selected and len(missing) == len(drill.selected):
        raise UsageError(
            f"none of the {len(missing)} shapes to drill down from {drill.cards_file} is in the"
            f" shapes file (first: {missing[0]}); give the shapes file their capture used"
        )
    selected = {g: why for g, why in drill.selected.items() if g in groups}
    return drill.model_copy(update={"selected": selected, "not_in_shapes": missing})
