"""Reading reports: in parallel, in bounded batches, each in a forked child.

ncu_report keeps about 0.4 MB per kernel it has handed out until its process ends (even after
the report is released), so with several jobs reports are read in batches by child processes
that exit after one batch: memory stays bounded however many reports there are. Each kernel
row is handed, where it is read, to the function the caller gives (classify gives the one that
classifies it), so that only small results cross a process boundary and this module knows no
rules and no cards. Compressed reports are inflated under one scratch folder that
this process owns and removes on every way out, also when the children are killed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import ReportError
from ..core.text import unicode_safe
from .records import KernelRecord
from .workers import WorkerFailure, run_in_children

REPORTS_PER_WORKER = 256
BYTES_PER_WORKER = 1 << 30
ReadProgress = Callable[[int, int], None]  # reports done, reports in all
PerKernel = Callable[[KernelRecord], Any]  # what the caller makes of each kernel row
Rows = list[tuple[KernelRecord, Any]]  # one report's rows, each with what PerKernel made of it
_per_kernel: PerKernel | None = None  # what a reader process hands each row to
_scratch: Path | None = None  # where it inflates compressed reports


def _use(per_kernel: PerKernel | None, scratch: Path | None) -> None:
    """Set what every reader (forked later, or this process) hands each kernel row to and where
    it inflates reports."""
    global _per_kernel, _scratch
    _per_kernel, _scratch = per_kernel, scratch


def _read(path: Path) -> Rows | str:
    """Reader: one report's kernel rows, each with its per-kernel result, or the one-line error
    that stopped it."""
    from .kernels import read_report

    assert _per_kernel is not None, "_use() first"
    try:
        rows = read_report(path, label=unicode_safe(str(path)), scratch=_scratch).kernels
    except ReportError as exc:
        return unicode_safe(str(exc))
    return [(row, _per_kernel(row)) for row in rows]


def _read_batch(batch: list[tuple[int, Path]]) -> list[tuple[int, Rows | str]]:
    """Worker: several reports, read by one process that then exits."""
    return [(index, _read(path)) for index, path in batch]


def _report_bytes(path: Path) -> int:
    """Rough uncompressed size (xz, gzip and the zstd of .ncu-repz shrink reports ~16x)."""
    try:
        size = path.stat().st_size
    except OSError:
        return 0  # gone since it was listed: its read reports that
    return size if path.name.endswith((".ncu-rep", ".nsight-cuprof-report")) else 16 * size


def reader_batches(paths: list[Path], workers: int) -> list[list[tuple[int, Path]]]:
    """Split reports over `workers` with equal bytes (largest first, to the lightest worker),
    then cut each worker's share into batches under the per-process caps."""
    shares: list[list[tuple[int, Path]]] = [[] for _ in range(workers)]
    loads = [0] * workers
    sized = sorted(((_report_bytes(p), i, p) for i, p in enumerate(paths)), key=lambda t: -t[0])
    for size, index, path in sized:
        lightest = loads.index(min(loads))
        shares[lightest].append((index, path))
        loads[lightest] += size
    batches: list[list[tuple[int, Path]]] = []
    for share in shares:
        current: list[tuple[int, Path]] = []
        budget = 0
        for index, path in sorted(share):
            size = _report_bytes(path)
            if current and (len(current) >= REPORTS_PER_WORKER or budget + size > BYTES_PER_WORKER):
                batches.append(current)
                current, budget = [], 0
            current.append((index, path))
            budget += size
        if current:
            batches.append(current)
    return batches


def _threaded() -> bool:
    """True if this process runs other native threads (torch does): fork could deadlock."""
    tasks = Path("/proc/self/task")
    return tasks.is_dir() and sum(1 for _ in tasks.iterdir()) > 1


def read_all(
    paths: list[Path], jobs: int, per_kernel: PerKernel, progress: ReadProgress | None = None
) -> list[Rows | str]:
    """The rows of every report, each with `per_kernel(row)`, in the order given, read by up to
    `jobs` processes (`per_kernel` runs in the process that read the row).
    A batch whose child dies (a native crash on a hostile report) is read again one report per
    child, so that the crash is pinned on its report and the others are still read."""
    with tempfile.TemporaryDirectory(prefix="ncu-classify-") as scratch:
        _use(per_kernel, Path(scratch))
        try:
            workers = max(1, min(jobs, len(paths)))
            batches = reader_batches(paths, workers)
            if workers == 1 or len(batches) <= 1 or _threaded():
                # Read here: asked for one process, or one reader's share, or fork is unsafe.
                # With --jobs 1 memory grows by ncu_report's 0.4 MB per kernel.
                return _read_here(paths, progress)
            return _read_in_children(paths, batches, workers, progress)
        finally:
            _use(None, None)


def _read_here(paths: list[Path], progress: ReadProgress | None) -> list[Rows | str]:
    results = []
    for done, path in enumerate(paths, 1):
        results.append(_read(path))
        if progress:
            progress(done, len(paths))
    return results


def _read_in_children(
    paths: list[Path],
    batches: list[list[tuple[int, Path]]],
    workers: int,
    progress: ReadProgress | None,
) -> list[Rows | str]:
    results: list[Rows | str] = ["" for _ in paths]
    if len(batches) > workers:  # recycled workers: pay ncu_report's start once, before forking
        from .kernels import warm_up

        warm_up(paths[0], _scratch)
    retry: list[list[tuple[int, Path]]] = []
    done = 0
    for tasks in (batches, retry):
        for number, outcome in run_in_children(_read_batch, tasks, workers):
            if not isinstance(outcome, WorkerFailure):
                for index, result in outcome:
                    results[index] = result
                done += len(outcome)
            elif len(tasks[number]) > 1:
                retry.extend([item] for item in tasks[number])
                continue
            else:
                index, path = tasks[number][0]
                results[index] = f"{path}: the report reader failed on it: {outcome.reason}"
                done += 1
            if progress:
                progress(done, len(paths))
    return results
