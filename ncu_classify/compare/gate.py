"""`diff --fail-on`: conditions a team guards in CI, checked against a comparison.

`flip`: a verdict flipped beyond noise. `slower:PCT`: a shape's summed kernel time grew by more
than PCT percent and by more than run-to-run noise. `any`: anything beyond noise changed (a
flip, a verdict changed by a metric one side lacks, a shape that lost or gained a class, a shape
added or removed, another dominant kernel, a time change either way).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..core.errors import UsageError
from .model import DiffFile, ShapeDiff


@dataclass(frozen=True)
class Condition:
    """One --fail-on value."""

    kind: str  # flip, slower, any
    percent: float = 0.0

    def __str__(self) -> str:
        return f"slower:{self.percent:g}" if self.kind == "slower" else self.kind


def parse_condition(text: str) -> Condition:
    """`flip`, `any` or `slower:PCT` (PCT a number >= 0)."""
    value = text.strip()
    if value in ("flip", "any"):
        return Condition(value)
    match = re.fullmatch(r"slower:(\d{1,6}(?:\.\d{1,6})?)", value)
    if match and math.isfinite(float(match.group(1))):
        return Condition("slower", float(match.group(1)))
    raise UsageError(f"--fail-on {text!r}: expected flip, any or slower:PCT (e.g. slower:5)")


def _holds(condition: Condition, shape: ShapeDiff) -> bool:
    if condition.kind == "flip":
        return shape.change == "flipped"
    slower = shape.speed == "slower" and shape.duration_ratio is not None
    if condition.kind == "slower":
        return slower and shape.duration_ratio > 1 + condition.percent / 100  # type: ignore[operator]
    moved = shape.speed in ("slower", "faster")
    changed = ("flipped", "missing_metric", "unclassified", "added", "removed")
    return shape.change in changed or bool(shape.kernel_changed or moved)


def failures(
    diff: DiffFile, conditions: list[Condition], allow_inconclusive: bool = False
) -> list[str]:
    """One line per condition that holds, naming how many shapes and the first few; with any
    condition given, shapes whose time change cannot be decided fail the gate too, unless
    `allow_inconclusive` (a gate cannot pass on a change it could not rule out)."""
    out = []
    unsure = [s for s in diff.shapes if s.speed == "inconclusive"]
    if conditions and unsure and not allow_inconclusive:
        out.append(
            f"{_count(unsure)} inconclusive ({_names(unsure)}): their intervals cannot rule out"
            " a change beyond noise; capture with a larger --repeat, or pass"
            " --allow-inconclusive"
        )
    for condition in conditions:
        hits = [s for s in diff.shapes if _holds(condition, s)]
        if hits:
            out.append(f"--fail-on {condition}: {_count(hits)} ({_names(hits)})")
    return out


def _count(shapes: list[ShapeDiff]) -> str:
    return f"{len(shapes)} shape{'s' if len(shapes) > 1 else ''}"


def _names(shapes: list[ShapeDiff]) -> str:
    return ", ".join(_name(s) for s in shapes[:3]) + (", ..." if len(shapes) > 3 else "")


def _name(shape: ShapeDiff) -> str:
    side = shape.candidate or shape.baseline
    return side.group if side else shape.stage
