"""A batch: the shapes one ncu process replays."""

from __future__ import annotations

from dataclasses import dataclass

from ..shapes.file import ShapeEntry
from .manifest import BatchKind


@dataclass(frozen=True)
class Batch:
    """The shapes one ncu process replays: a stage, all shapes, or one GPU's share."""

    name: str
    entries: list[ShapeEntry]
    device: int | None = None  # the GPU it was planned for (one process per GPU), if any
    kind: BatchKind = "counters"  # or `times`: the repeats' durations alone, one replay pass
