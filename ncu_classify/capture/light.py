"""The light tier of `capture --coverage P --light-after L` (issue 41): per stage, the largest
shapes up to L % of the stage's recorded time are captured with the full metric list; the further
shapes up to P % in batches of their own, of kind `light`, that ask ncu for the light list
(`core.metrics.LIGHT_METRICS`: about one replay pass a kernel against twelve), after the full
ones. A light shape's card lacks the figures of the costly counters (sm_pct, l2_pct, hot units,
the roofline's FLOPs): the rules leave what needs them unresolved.

The cut is `order.wanted_groups` at both percentages, over the whole shapes file: every shard
cuts at the same place. --resume keeps the capture's --light-after unless given (a stopped
capture finishes as it began); a shape captured light stays so only while it is still in the
light band: with `--light-after 0` (no light tier) or one that now covers it, it is captured
again with the full list."""

from __future__ import annotations

from dataclasses import replace

from ..core.errors import UsageError
from ..shapes.file import ShapeEntry, ShapesFile
from .batch import Batch, gpu_batches, plan_batches
from .order import wanted_groups


def check_light_after(light_after_pct: float | None, coverage_pct: float | None) -> None:
    """UsageError unless --light-after comes with --coverage and lies below its target (0,
    no light tier, goes with anything)."""
    if not light_after_pct:
        return
    if coverage_pct is None:
        raise UsageError(
            f"--light-after {light_after_pct:g} needs --coverage: it splits the shapes a"
            " coverage target captures"
        )
    if not 0 < light_after_pct < coverage_pct:
        raise UsageError(
            f"--light-after {light_after_pct:g}: more than 0 and less than the coverage target"
            f" ({coverage_pct:g})"
        )


def light_set(
    shapes: ShapesFile, coverage_pct: float | None, light_after_pct: float | None
) -> frozenset[str]:
    """The group ids captured with the light list: per stage, those the coverage target takes
    beyond the largest shapes up to `light_after_pct` of the stage's time (untimed shapes are
    always captured with the full list); empty without --light-after."""
    check_light_after(light_after_pct, coverage_pct)
    if not light_after_pct or coverage_pct is None:
        return frozenset()
    return frozenset(wanted_groups(shapes, coverage_pct) - wanted_groups(shapes, light_after_pct))


def light_batches(
    entries: list[ShapeEntry],
    taken: frozenset[str],
    max_batch: int = 0,
    per_stage: bool = True,
    gpus: tuple[int, ...] = (),
) -> list[Batch]:
    """The light shapes' batches, as the full ones are cut (one per stage, or one per GPU with
    --one-process --gpus; no time bands: they are each stage's tail), of kind `light` and named
    `<name>.light` (`vae.light`, `gpu0.light`), never a name in `taken`."""
    if not entries:
        return []
    if not per_stage and len(gpus) > 1:
        batches = gpu_batches(entries, gpus, max_batch)
    else:
        batches = plan_batches(entries, max_batch, frozenset(), per_stage)
    names, out = set(taken), []
    for batch in batches:
        name, attempt = f"{batch.name}.light", 1
        while name in names:
            attempt += 1
            name = f"{batch.name}.light.r{attempt}"
        names.add(name)
        out.append(replace(batch, name=name, kind="light"))
    return out
