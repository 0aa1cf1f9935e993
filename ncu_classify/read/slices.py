"""What each reader process reads: whole reports, or windows of kernels of a large one.

One large report (a `capture --one-process` of a whole model holds hundreds to thousands of
kernels) would otherwise be one process's work however many cores there are. Such a report is
cut into windows of consecutive kernels, one per job, each read by its own process, which
fetches only the window's kernels (about 1-2.5 ms each). Every process opens the report whole,
so the windows share one copy without its source blocks (`lean`), made here once, as a
compressed report is inflated once, here. The kernel count and the source blocks come from the
report's framing (block headers), checked before anything is cut.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ReportError
from .framing import ReportInfo, check_report
from .inflate import inflated_size, plain_file
from .lean import lean_report

MIN_WINDOW = 64  # kernels: below this a window costs more to start than it saves
# the fewest bytes a kernel takes in a report: ~40 KB without source blocks (Wan 14B's 392
# kernels in 15.6 MB), several times that with them; smaller reports are never cut
KERNEL_BYTES = 8 << 10
Window = tuple[int, int]  # kernels [start, stop) of a report, in report order


@dataclass(frozen=True)
class ReadUnit:
    """One reader task: the file to open, the report as the user named it (rows and errors
    name it) and the window of its kernels, None for all of them."""

    path: Path
    label: Path
    window: Window | None = None
    share: float = 1.0  # the window's part of the report's kernels
    # the framing of `path` where the plan made it (a window's lean copy, a file of this
    # process): its reader need not check it again (30 ms a reader for Wan 14B x 4 here)
    checked: ReportInfo | None = None


def windows(kernels: int, jobs: int) -> list[Window]:
    """`kernels` cut into at most `jobs` windows of nearly equal size, none under MIN_WINDOW."""
    count = max(1, min(jobs, kernels // MIN_WINDOW))
    edges = [kernels * i // count for i in range(count + 1)]
    return [(edges[i], edges[i + 1]) for i in range(count)]


def report_bytes(unit: ReadUnit) -> int:
    """Uncompressed bytes the unit reads, for balancing the readers and deciding what to cut:
    what an xz or gzip report declares, else a guess (the zstd of .ncu-repz and bz2 shrink
    reports with their sources ~16x; without them, as `capture --drop-sources` writes, ~35x)."""
    try:
        size = unit.path.stat().st_size
    except OSError:
        return 0  # gone since it was listed: its read reports that
    plain = unit.checked is not None or unit.path.name.endswith(
        (".ncu-rep", ".nsight-cuprof-report")
    )
    inflated = size if plain else (inflated_size(unit.path) or 16 * size)
    return int(inflated * unit.share)


def plan_units(
    paths: list[Path],
    jobs: int,
    stack: contextlib.ExitStack,
    scratch: Path | None,
    labels: list[Path] | None = None,
) -> list[list[ReadUnit]]:
    """Per report, its read units: one for the whole report, or (with `jobs` > 1) one per
    window of a report of at least 2 x MIN_WINDOW kernels. A report whose framing cannot be
    read stays whole, for its reader to report on; inflated copies live as long as `stack`.
    `labels`: how rows and errors name each report (default: its path)."""
    named = list(zip(paths, labels or paths, strict=True))
    if jobs <= 1:
        return [[ReadUnit(path, label)] for path, label in named]
    return [_units(path, label, jobs, stack, scratch) for path, label in named]


def _units(
    path: Path, label: Path, jobs: int, stack: contextlib.ExitStack, scratch: Path | None
) -> list[ReadUnit]:
    """The units of one report when several jobs read."""
    whole = ReadUnit(path, label)
    if report_bytes(whole) < 2 * MIN_WINDOW * KERNEL_BYTES:
        return [whole]
    try:
        plain = stack.enter_context(plain_file(path, scratch))
        info = check_report(plain, label=label)
    except (OSError, ReportError):
        return [whole]  # its reader says what is wrong with it
    kernels = info.kernels
    if kernels is None or kernels < 2 * MIN_WINDOW:
        return [ReadUnit(plain, label)]
    # on disk: the windows' copies of every large report are made first and kept to the end
    # of the run (in memory, a hundred captures would hold gigabytes and as many descriptors)
    lean = stack.enter_context(lean_report(plain, info, scratch, in_memory=False))
    checked = None  # the user's file (or its inflated copy) is checked again by each reader
    if lean != plain:  # a copy of ours: the same blocks less the sources, checked already
        checked = dataclasses.replace(info, size=lean.stat().st_size, source_blocks=[])
    cut = windows(kernels, jobs)
    return [ReadUnit(lean, label, w, (w[1] - w[0]) / kernels, checked) for w in cut]
