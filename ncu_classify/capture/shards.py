"""Which shapes a shard of a job array captures (`--shard K/N`), and what a shape costs.

Shapes that draw the same inputs (the FA2 and FA3 variants of an attention shape) form a unit,
which always lands in one shard whole, so its inputs are drawn once. `cost_v1` (every new
capture) balances the shards by capture's cost model with bounded-load rendezvous hashing: units
are taken costliest first, each to the first shard of its own hash-ranked preference list whose
estimated seconds stay within 1.1x the ideal (the total over N), else to the lightest shard. A
unit's preference list depends on its group ids alone, so a shapes file that grows moves few
units. `hash` (captures made before it; --resume keeps a capture's method) put each shape in the
shard its group id hashes to, blind to cost: the largest of 8 shards of the 480x832 workload held
13 of 34 shapes, 2.4x the ideal.
"""

from __future__ import annotations

import hashlib
import math

from ..core.errors import UsageError
from ..shapes.file import ShapeEntry
from ..shapes.ops import InputSpec
from .manifest import ShardMethod

SLACK = 1.1  # a shard may take a unit while its load stays within this much of the ideal
Unit = list[tuple[int, ShapeEntry]]  # shapes (with their file positions) drawing the same inputs


def draw_cost(entry: ShapeEntry) -> float:
    """Rough seconds to generate and hash a shape's inputs on the CPU (~80 M elements/s on
    the H200 hosts, measured on the workload's attention buffers)."""
    return sum(math.prod(dims) for dims, _, _ in entry.shape.inputs()) / 8e7


def run_cost(entry: ShapeEntry) -> float:
    """Rough seconds a shape adds besides its inputs: a fixed part and its kernels under 9
    replay passes (~50 TFLOP/s)."""
    return 0.5 + 9 * entry.shape.nominal_flops() / 5e14


def input_units(entries: list[ShapeEntry]) -> list[Unit]:
    """Shapes (with their file positions) grouped by the inputs they draw, in order of first
    appearance: a unit goes to one GPU (and one shard) whole and replays back to back, so its
    shapes share one draw (the FA2 and FA3 variants of an attention shape draw the same 1.4 GB)."""
    units: dict[tuple[str, tuple[InputSpec, ...]], Unit] = {}
    for index, entry in enumerate(entries):
        key = (entry.shape.op, tuple(entry.shape.inputs()))
        units.setdefault(key, []).append((index, entry))
    return list(units.values())


def unit_cost(unit: Unit) -> float:
    """Estimated seconds of a unit: its inputs are drawn once, then each shape runs."""
    return draw_cost(unit[0][1]) + sum(run_cost(entry) for _, entry in unit)


def _rank(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def shard_numbers(entries: list[ShapeEntry], count: int, method: ShardMethod) -> list[int]:
    """The shard (1-based) of every entry, in file order."""
    if method == "hash":
        return [_rank(e.group) % count + 1 for e in entries]
    numbers = [0] * len(entries)
    units = [(unit_cost(u), min(e.group for _, e in u), u) for u in input_units(entries)]
    capacity = SLACK * sum(cost for cost, _, _ in units) / count
    loads = [0.0] * count
    for cost, key, unit in sorted(units, key=lambda u: (-u[0], u[1])):
        prefs = sorted(range(count), key=lambda s: _rank(f"{key}\n{s}"))
        shard = next((s for s in prefs if loads[s] + cost <= capacity), None)
        if shard is None:
            shard = min(range(count), key=lambda s: (loads[s], prefs.index(s)))
        loads[shard] += cost
        for index, _ in unit:
            numbers[index] = shard + 1
    return numbers


def select_shard(
    entries: list[ShapeEntry], index: int, count: int, method: ShardMethod = "cost_v1"
) -> list[ShapeEntry]:
    """Shard `index` of `count` (1-based), in file order."""
    if not 1 <= index <= count:
        raise UsageError(f"--shard {index}/{count}: K must be between 1 and N")
    numbers = shard_numbers(entries, count, method)
    return [e for e, n in zip(entries, numbers, strict=True) if n == index]


def shard_costs(entries: list[ShapeEntry], count: int, method: ShardMethod) -> list[float]:
    """Estimated seconds of each shard (its units' costs), for the balance figures."""
    costs = [0.0] * count
    numbers = shard_numbers(entries, count, method)
    for unit in input_units(entries):
        costs[numbers[unit[0][0]] - 1] += unit_cost(unit)
    return costs
