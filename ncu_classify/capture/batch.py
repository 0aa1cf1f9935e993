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
) -> list[Batch]:
    """One batch per stage in file order (or one for all, named `all`), cut into chunks of
    `max_batch` shapes; names avoid `taken` (reports already in the folder, on --resume)."""
    by_stage: dict[str, list[ShapeEntry]] = {}
    for entry in entries:
        by_stage.setdefault(entry.stage if per_stage else "all", []).append(entry)
    batches = []
    for stage, members in by_stage.items():
        size = max_batch or len(members)
        chunks = [members[i : i + size] for i in range(0, len(members), size)]
        for number, chunk in enumerate(chunks, 1):
            name = stage if len(chunks) == 1 else f"{stage}-{number}"
            attempt = 1
            while name in taken:
                attempt += 1
                name = f"{stage}-{number}.r{attempt}" if len(chunks) > 1 else f"{stage}.r{attempt}"
            batches.append(Batch(name, chunk))
    return batches


def gpu_batches(
    entries: list[ShapeEntry],
    gpus: tuple[int, ...],
    max_batch: int = 0,
    taken: frozenset[str] = frozenset(),
) -> list[Batch]:
    """One process per GPU, named after its device (`gpu0`, `gpu1`, ...): units of shapes that
    draw the same inputs, dealt costliest first to the GPU with the least estimated work, in
    file order within each GPU (a unit's shapes together, at its first one); cut by
    `max_batch` if given."""
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
