"""Reading reports: in parallel, in bounded batches, each in a forked child.

ncu_report keeps about 0.4 MB per kernel it has handed out until its process ends (even after
the report is released), so with several jobs reports are read in batches by child processes
that exit after one batch: memory stays bounded however many reports there are. Each kernel
row is handed, where it is read, to the function the caller gives (classify gives the one that
classifies it), so that only small results cross a process boundary and this module knows no
rules and no cards. A large report is read in windows of kernels by several processes
(`slices`). Compressed reports are inflated under one scratch folder that this process owns and
removes on every way out, also when the children are killed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.errors import ReportError
from ..core.text import unicode_safe
from .preload import finish_loading, loading_task
from .rows import KernelRow
from .slices import ReadUnit, plan_units, report_bytes
from .workers import WorkerFailure, run_in_children

REPORTS_PER_WORKER = 256
STREAM_ROWS = 16  # kernel rows a reader process sends at a time (the parent unpickles them)
BYTES_PER_WORKER = 1 << 30
ReadProgress = Callable[[int, int], None]  # read units (reports or windows) done, in all
PerKernel = Callable[[KernelRow], Any]  # what the caller makes of each kernel row
Rows = list[tuple[KernelRow, Any]]  # one report's rows, each with what PerKernel made of it
_per_kernel: PerKernel | None = None  # what a reader process hands each row to
_scratch: Path | None = None  # where it inflates compressed reports


def _use(per_kernel: PerKernel | None, scratch: Path | None) -> None:
    """Set what every reader (forked later, or this process) hands each kernel row to and where
    it inflates reports."""
    global _per_kernel, _scratch
    _per_kernel, _scratch = per_kernel, scratch


def _read_parts(unit: ReadUnit, size: int = STREAM_ROWS) -> Iterator[Rows | str]:
    """Reader: one report's kernel rows (or its window's), each with its per-kernel result, in
    parts of `size` kernels read, then handed on (a reader process sends each part at once),
    or the one-line error that stopped it, after which the parts before it are void."""
    from .kernels import iter_report

    assert _per_kernel is not None, "_use() first"
    label = unicode_safe(str(unit.label))
    try:
        with contextlib.closing(
            iter_report(unit.path, label, _scratch, unit.window, unit.checked)
        ) as kernels:
            first = True  # one part at least, maybe empty (a window of no kernel)
            while (part := list(itertools.islice(kernels, size))) or first:
                first = False
                yield [(row, _per_kernel(row)) for row in part]
    except ReportError as exc:
        # the path as the message holds it: made UTF-8-safe with it (a name not UTF-8)
        yield unicode_safe(str(exc)).replace(unicode_safe(str(unit.path)), label, 1)
    except Exception as exc:  # what no check foresaw: this report's alone, as in a reader process
        line = traceback.format_exception_only(type(exc), exc)[-1].strip()
        yield f"{label}: the report reader failed on it: {unicode_safe(line)}"


def _read(unit: ReadUnit) -> Rows | str:
    """One unit's rows, read here (every kernel first, then each handed on, as one part), or
    the one-line error that stopped its reader."""
    return _joined(list(_read_parts(unit, size=2**62)))


def _joined(parts: list[Rows | str]) -> Rows | str:
    """One unit's rows from its parts, or the error that voids them."""
    errors = [part for part in parts if isinstance(part, str)]
    return (
        errors[-1]
        if errors
        else [row for part in parts if not isinstance(part, str) for row in part]
    )


def _read_batch(batch: list[tuple[int, ReadUnit]]) -> Iterator[tuple[int, Rows | str]]:
    """Worker: several reports, read by one process that then exits; each part is sent to the
    parent as soon as it is read."""
    for index, unit in batch:
        for part in _read_parts(unit):
            yield index, part


def reader_batches(units: list[ReadUnit], workers: int) -> list[list[tuple[int, ReadUnit]]]:
    """Split units over `workers` with equal bytes (largest first, to the lightest worker),
    then cut each worker's share into batches under the per-process caps."""
    shares: list[list[tuple[int, ReadUnit]]] = [[] for _ in range(workers)]
    loads = [0] * workers
    sized = sorted(((report_bytes(u), i, u) for i, u in enumerate(units)), key=lambda t: -t[0])
    for size, index, unit in sized:
        lightest = loads.index(min(loads))
        shares[lightest].append((index, unit))
        loads[lightest] += size
    batches: list[list[tuple[int, ReadUnit]]] = []
    for share in shares:
        current: list[tuple[int, ReadUnit]] = []
        budget = 0
        for index, path in sorted(share, key=lambda item: item[0]):
            size = report_bytes(path)
            if current and (len(current) >= REPORTS_PER_WORKER or budget + size > BYTES_PER_WORKER):
                batches.append(current)
                current, budget = [], 0
            current.append((index, path))
            budget += size
        if current:
            batches.append(current)
    return batches


def _threaded() -> bool:
    """True if this process runs other native threads (torch does): fork could deadlock. The
    thread that loads NVIDIA's library (preload) does not count: it is waited for first."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return False
    others = {task.name for task in tasks.iterdir()} - {str(os.getpid()), loading_task()}
    return bool(others)


def read_all(
    paths: list[Path],
    jobs: int,
    per_kernel: PerKernel,
    progress: ReadProgress | None = None,
    labels: list[Path] | None = None,
) -> list[Rows | str]:
    """The rows of every report, each with `per_kernel(row)`, in the order given, read by up to
    `jobs` processes (`per_kernel` runs in the process that read the row); a large report is
    read in windows by several. A batch whose child dies (a native crash on a hostile report)
    is read again one unit per child, so that the crash is pinned on its report and the others
    are still read. `labels`: how rows and errors name each report (default: its path)."""
    with contextlib.ExitStack() as owned:
        scratch = _scratch_folder(owned)
        _use(per_kernel, scratch)
        try:
            with contextlib.ExitStack() as inflated:
                parallel = jobs > 1 and not _threaded()  # fork is unsafe beside native threads
                planned = plan_units(paths, jobs if parallel else 1, inflated, scratch, labels)
                units = [unit for group in planned for unit in group]
                workers = max(1, min(jobs, len(units)))
                batches = reader_batches(units, workers)
                if not parallel or workers == 1 or len(batches) <= 1:
                    # Read here, while NVIDIA's library still loads (ncu_report's own dlopen
                    # waits for it at the first kernel, after the framing check and the lean
                    # copy). With --jobs 1 memory grows by ncu_report's 0.4 MB per kernel.
                    return _merged(planned, _read_here(units, progress))
                finish_loading()  # NVIDIA's library, loading beside the plan, before any fork
                return _merged(planned, _read_in_children(units, batches, workers, progress))
        finally:
            _use(None, None)


def _scratch_folder(owned: contextlib.ExitStack) -> Path | None:
    """A temporary folder this process owns for the inflated and lean copies, removed with
    `owned`; None when none can be made (plain reports are then read as they are, and each
    compressed one fails alone, saying why)."""
    try:
        return Path(owned.enter_context(tempfile.TemporaryDirectory(prefix="ncu-classify-")))
    except OSError:
        return None


def _merged(planned: list[list[ReadUnit]], results: list[Rows | str]) -> list[Rows | str]:
    """Per report, its units' rows joined in window order, or the first error among them."""
    merged: list[Rows | str] = []
    position = 0
    for group in planned:
        parts = results[position : position + len(group)]
        position += len(group)
        errors = [part for part in parts if isinstance(part, str)]
        rows = [row for part in parts if not isinstance(part, str) for row in part]
        merged.append(errors[0] if errors else rows)
    return merged


def _read_here(units: list[ReadUnit], progress: ReadProgress | None) -> list[Rows | str]:
    results = []
    for done, unit in enumerate(units, 1):
        results.append(_read(unit))
        if progress:
            progress(done, len(units))
    return results


def _read_in_children(
    units: list[ReadUnit],
    batches: list[list[tuple[int, ReadUnit]]],
    workers: int,
    progress: ReadProgress | None,
) -> list[Rows | str]:
    results: list[Rows | str] = ["" for _ in units]
    if len(batches) > workers or units[0].window:  # pay ncu_report's start once, before forking
        from .kernels import warm_up

        warm_up(units[0].path, _scratch)
    retry: list[list[tuple[int, ReadUnit]]] = []
    done = 0
    for tasks in (batches, retry):
        for number, outcome in run_in_children(_read_batch, tasks, workers):
            if not isinstance(outcome, WorkerFailure):
                parts: dict[int, list[Rows | str]] = {}
                for index, part in outcome:
                    parts.setdefault(index, []).append(part)
                for index, unit_parts in parts.items():
                    results[index] = _joined(unit_parts)
                done += len(parts)
            elif len(tasks[number]) > 1:
                retry.extend([item] for item in tasks[number])
                continue
            else:
                index, unit = tasks[number][0]
                results[index] = f"{unit.label}: the report reader failed on it: {outcome.reason}"
                done += 1
            if progress:
                progress(done, len(units))
    return results
