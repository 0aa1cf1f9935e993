"""A batch: the shapes one ncu process replays, and how a capture's shapes are cut into batches
(one per stage, or one per GPU by estimated cost)."""

from __future__ import annotations

from dataclasses import dataclass

from ..shapes.file import ShapeEntry
from .manifest import BatchKind
from .shards import input_units, unit_cost


@dataclass(frozen=True)
class Batch:
    """The shapes one ncu process replays: a stage, all shapes, or one GPU's share."""

    name: str
    entries: list[ShapeEntry]
    device: int | None = None  # the GPU it was planned for (one process per GPU), if any
    kind: BatchKind = "counters"  # or `times`: the repeats' durations alone, one replay pass


def plan_batches(
    entries: list[ShapeEntry],
    max_batch: int = 0,
    taken: frozenset[str] = frozenset(),
    per_stage: bool = True,
    bands: dict[str, int] | None = None,
) -> list[Batch]:
    """One batch per stage in order of first appearance (or one for all, named `all`), cut
    into chunks of `max_batch` shapes and, given `bands` (group -> time band, capture by
    time), into one piece per band, the pieces of every stage's first band before those of
    the next; a stage in more than one piece names them `stage-1`, `stage-2`, ...; names
    avoid `taken` (reports already in the folder, on --resume)."""
    by_stage: dict[str, dict[int, list[ShapeEntry]]] = {}
    for entry in entries:
        band = (bands or {}).get(entry.group, 0)
        stage = entry.stage if per_stage else "all"
        by_stage.setdefault(stage, {}).setdefault(band, []).append(entry)
    pieces: list[tuple[int, str, list[ShapeEntry]]] = []
    for stage, banded in by_stage.items():
        chunks = [
            (band, members[i : i + (max_batch or len(members))])
            for band, members in sorted(banded.items())
            for i in range(0, len(members), max_batch or len(members))
        ]
        for number, (band, chunk) in enumerate(chunks, 1):
            name = stage if len(chunks) == 1 else f"{stage}-{number}"
            attempt = 1
            while name in taken:
                attempt += 1
                name = f"{stage}-{number}.r{attempt}" if len(chunks) > 1 else f"{stage}.r{attempt}"
            pieces.append((band, name, chunk))
    pieces.sort(key=lambda piece: piece[0])  # stable: stages in order within a band
    return [Batch(name, chunk) for _, name, chunk in pieces]


def gpu_batches(
    entries: list[ShapeEntry],
    gpus: tuple[int, ...],
    max_batch: int = 0,
    taken: frozenset[str] = frozenset(),
) -> list[Batch]:
    """One process per GPU, named after its device (`gpu0`, `gpu1`, ...): units of shapes that
    draw the same inputs, dealt costliest first to the GPU with the least estimated work, in
    the order of `entries` within each GPU (by share of their stage's time when capturing by
    time; a unit's shapes together, at its first one); cut by `max_batch` if given."""
    shares: list[list[list[tuple[int, ShapeEntry]]]] = [[] for _ in gpus]
    loads = [0.0] * len(gpus)
    costed = [(unit_cost(unit), unit) for unit in input_units(entries)]
    for cost, unit in sorted(costed, key=lambda c: -c[0]):
        lightest = loads.index(min(loads))
        shares[lightest].append(unit)
        loads[lightest] += cost
    batches = []
    for device, share in zip(gpus, shares, strict=True):
        members = [entry for unit in sorted(share, key=lambda u: u[0][0]) for _, entry in unit]
        for batch in plan_batches(members, max_batch, frozenset(), per_stage=False):
            name = batch.name.replace("all", f"gpu{device}", 1)
            while name in taken:
                name += ".r"
            batches.append(Batch(name, batch.entries, device))
    return [b for b in batches if b.entries]
