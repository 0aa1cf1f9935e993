"""Capture by time (issue 41): a recording knows each shape's real kernel time, and that time is
concentrated (the largest 37-43 % of a video model's shapes hold 99 % of it), so capture takes
the largest shapes first, whatever stops it, and with `--coverage P` only the largest shapes
of each stage until P % of the stage's recorded kernel time is covered; the rest are kept in
the manifest as below the target (not failed, not pending).

A shape's time is the program's: `real_us` x the calls the recording saw. The target is
reckoned against the stage's whole recorded time (its uncovered work included), over the
shapes file's shapes, never a shard's: every shard of a job array cuts at the same place, so
their captures add up to the target. Shapes without a recorded time are always captured."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.errors import UsageError
from ..shapes.file import ShapeEntry, ShapesFile
from .shards import run_cost


def program_us(entry: ShapeEntry) -> float | None:
    """The program's kernel time of a shape per run (real_us x the calls the recording saw);
    None for a shape the recording did not time."""
    shape = entry.shape
    if shape.real_us is None:
        return None
    return shape.real_us * (shape.real_calls or shape.calls)


def is_timed(shapes: ShapesFile) -> bool:
    """Whether the file carries the recorded program's kernel time (a recording made on a GPU)."""
    recorded = shapes.recorded
    timed = recorded is not None and recorded.totals is not None
    return timed and recorded.totals.basis == "kernel_time"  # type: ignore[union-attr]


def largest_first(entries: list[ShapeEntry]) -> list[ShapeEntry]:
    """The shapes by their program time, largest first (untimed shapes after the timed ones,
    ties in file order)."""

    def rank(item: tuple[int, ShapeEntry]) -> tuple[float, int]:
        time = program_us(item[1])
        return (-(time if time is not None else -1.0), item[0])  # a shape of 0 us is timed

    return [entry for _, entry in sorted(enumerate(entries), key=rank)]


BANDS = (50.0, 90.0, 99.0)  # shares of a stage's time where capture by time starts a process
PROCESS_START_S = 8.0  # an ncu process's start (6-10 s): a piece costing less joins the one before


def time_bands(entries: list[ShapeEntry]) -> dict[str, int]:
    """Each shape's time band within its stage, shapes taken largest first: 0 while the
    shapes before it hold less than 50 % of the stage's time, 1 below 90 %, 2 below 99 %,
    3 for the rest. One ncu process per stage would finish a stage's smallest shapes before
    the next stage's largest: cut at the bands, every stage's largest shapes are captured
    first. A band whose shapes cost less than a process start (capture's cost model) joins
    the band before it: a small stage stays one process."""
    bands: dict[str, int] = {}
    by_stage: dict[str, list[ShapeEntry]] = {}
    for entry in largest_first(entries):
        by_stage.setdefault(entry.stage, []).append(entry)
    for members in by_stage.values():
        whole = sum(program_us(e) or 0 for e in members)
        before, cut = 0.0, []
        for entry in members:
            share = 100 * before / whole if whole else 0.0
            cut.append(sum(share >= limit for limit in BANDS))
            before += program_us(entry) or 0
        bands.update(zip([e.group for e in members], _joined(members, cut), strict=True))
    return bands


def _joined(members: list[ShapeEntry], cut: list[int]) -> list[int]:
    """The bands of a stage's shapes (largest first) after each band that costs less than a
    process start has joined the one before it (the first band keeps its number)."""
    cost: dict[int, float] = {}
    for entry, band in zip(members, cut, strict=True):
        cost[band] = cost.get(band, 0.0) + run_cost(entry)
    kept: dict[int, int] = {}
    for band in sorted(cost):
        earlier = [kept[b] for b in sorted(kept)]
        kept[band] = earlier[-1] if earlier and cost[band] < PROCESS_START_S else band
    return [kept[band] for band in cut]


def wanted_groups(shapes: ShapesFile, target_pct: float) -> set[str]:
    """The group ids `--coverage target_pct` captures: per stage, the largest shapes until
    their time reaches the target share of the stage's recorded kernel time (all of them
    when the stage's uncovered work keeps it below the target), and every untimed shape."""
    if not is_timed(shapes):
        raise UsageError(
            "--coverage needs the recorded program's kernel time: this shapes file was not"
            " recorded on a GPU by ncu-classify record (no real_us per shape)"
        )
    wholes = stage_wholes(shapes)
    wanted: set[str] = set()
    by_stage: dict[str, list[ShapeEntry]] = {}
    for entry in shapes.entries():
        if program_us(entry) is None:
            wanted.add(entry.group)
        else:
            by_stage.setdefault(entry.stage, []).append(entry)
    for stage, members in by_stage.items():
        goal, covered = wholes[stage] * target_pct / 100, 0.0
        for entry in largest_first(members):
            if covered >= goal and target_pct < 100:  # 100: every shape, of no time too
                break
            wanted.add(entry.group)
            covered += program_us(entry) or 0
    return wanted


def stage_wholes(shapes: ShapesFile) -> dict[str, float]:
    """Each stage's recorded kernel time (its uncovered work included); where the recording
    has none for it, the sum of its shapes' times."""
    stages = shapes.recorded.totals.stages if shapes.recorded and shapes.recorded.totals else {}
    sums: dict[str, float] = {}
    for entry in shapes.entries():
        sums[entry.stage] = sums.get(entry.stage, 0.0) + (program_us(entry) or 0)
    return {
        stage: (stages[stage].kernel_us if stage in stages else None) or total
        for stage, total in sums.items()
    }


def largest_share_first(shapes: ShapesFile, entries: list[ShapeEntry]) -> list[ShapeEntry]:
    """The shapes by their share of their stage's time, largest first (untimed shapes after
    the timed ones, ties in file order): one process for all stages, taken by time alone,
    ran the Wan recording's 0.19 ms output stage last, at 0 % when stopped at half its
    estimated time; by share every stage's largest shapes come first (output 100 %, the
    decode 97.6 % for 98.3 %, the DiT 99.6 % at half)."""
    wholes = stage_wholes(shapes)

    def rank(item: tuple[int, ShapeEntry]) -> tuple[int, float, int]:
        index, entry = item
        time, whole = program_us(entry), wholes.get(entry.stage) or 0.0
        if time is None:
            return (1, 0.0, index)
        return (0, -(time / whole if whole else 0.0), index)

    return [entry for _, entry in sorted(enumerate(entries), key=rank)]


@dataclass(frozen=True)
class StageShares:
    """Each stage's recorded kernel time and its shapes' shares, for the progress line: the
    share of a stage's time the shapes captured so far cover."""

    whole_us: dict[str, float]
    shape_us: dict[str, tuple[str, float]]  # group -> (stage, program time)
    part: dict[str, float] | None = None  # a shard's: the percent of each stage it holds

    @staticmethod
    def of(shapes: ShapesFile, shard: Iterable[str] | None = None) -> StageShares | None:
        """The shares of a timed shapes file; None for one without recorded times. `shard`:
        the groups of the shard this capture takes, whose share of each stage the line says."""
        if not is_timed(shapes):
            return None
        stages = shapes.recorded.totals.stages  # type: ignore[union-attr]
        shape_us = {e.group: (e.stage, program_us(e) or 0.0) for e in shapes.entries()}
        whole = {stage: t.kernel_us or 0.0 for stage, t in stages.items()}
        shares = StageShares(whole, shape_us)
        if shard is None:
            return shares
        return dataclasses.replace(shares, part=shares.covered(shard))

    def told(self, done: Iterable[str]) -> str:
        """`dit 27.5 % | vae 26.8 % | ` (a shard's: `dit 12.1 % of 25.0 % | `)."""
        parts = self.part or {}
        return "".join(
            f"{stage} {pct:.1f} %" + (f" of {parts[stage]:.1f} %" if stage in parts else "")
            + " | "
            for stage, pct in self.covered(done).items()
        )  # fmt: skip

    def covered(self, done: Iterable[str]) -> dict[str, float]:
        """Per stage with shapes done, the percent of its recorded time they cover, stages in
        the recording's order (whatever order `done` comes in)."""
        sums: dict[str, float] = {}
        for group in done:
            stage, time = self.shape_us.get(group, ("", 0.0))
            if stage:
                sums[stage] = sums.get(stage, 0.0) + time
        return {
            stage: 100 * sums[stage] / whole
            for stage, whole in self.whole_us.items()
            if stage in sums and whole
        }
