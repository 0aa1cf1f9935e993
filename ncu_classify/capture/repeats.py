"""Planning --repeat N: after each counters batch a duration-only one (`<name>.times`: the same
shapes on the same GPU, launched N - 1 more times under one replay pass with inputs drawn on the
GPU), and on --resume one for shapes captured but not yet timed.

Measured on the H200 (reports/repeat/): a duration-only ncu process costs its start (~6 s) and
~11 ms per profiled kernel; CUDA events or CUPTI activity inside a target under ncu time ncu's
interception, not the kernel (a 25 us GEMM read 267 us), so durations come from ncu itself."""

from __future__ import annotations

from pathlib import Path

from ..shapes.file import ShapeEntry
from .batch import Batch
from .manifest import ManifestShape, report_kept

DURATION_METRIC = "gpu__time_duration.sum"  # a times batch's one metric: one pass per kernel


def with_times(
    batches: list[Batch], untimed: list[ShapeEntry], taken: frozenset[str]
) -> list[Batch]:
    """Each counters batch followed by its duration-only batch (`<name>.times`, same shapes,
    same GPU), and on --resume one `times` batch for shapes captured but not yet timed."""
    out: list[Batch] = []
    names = set(taken) | {b.name for b in batches}
    for batch in batches:
        times = Batch(_free(f"{batch.name}.times", names), batch.entries, batch.device, "times")
        out += [batch, times]
    if untimed:
        out.append(Batch(_free("times", names), untimed, None, "times"))
    return out


def _free(name: str, taken: set[str]) -> str:
    """`name`, or `name.rN` if taken; the name is then taken."""
    chosen, attempt = name, 1
    while chosen in taken:
        attempt += 1
        chosen = f"{name}.r{attempt}"
    taken.add(chosen)
    return chosen


def timed(record: ManifestShape, out: Path) -> bool:
    """Whether a captured shape's duration repeats are there (ok, report present)."""
    report = record.times_report
    return record.times_status == "ok" and report_kept(out, report)
