"""classify: report files or capture folders -> kernel rows -> classified cards.

A folder with a capture `manifest.json` yields one card per captured shape, in manifest order,
its kernels found by NVTX range. Any other report (a user's own ncu run) yields one card per
NVTX push/pop range, or per kernel name when there is none. Reports are read in parallel, one
process per report, and merged in input order so the output does not depend on timing.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .cards import Card, CardFile, KernelCard, build_card, card_class, count_classes, kernel_card
from .errors import ReportError
from .manifest import ShapeRecord
from .records import KernelRecord
from .report_format import report_stem
from .rules import LoadedRules
from .sources import Source, collect_inputs, input_files
from .workers import WorkerFailure, run_in_children

__all__ = ["classify", "input_files", "read_all", "reader_batches"]

REPORTS_PER_WORKER = 256
BYTES_PER_WORKER = 1 << 30
Progress = Callable[[int, int], None]  # reports done, reports in all


Pair = tuple[KernelRecord, KernelCard]  # a kernel row and its classified card entry
_rules: LoadedRules | None = None  # the rules a reader process classifies with


def _use_rules(rules: LoadedRules) -> None:
    """Reader-process initialiser: classify kernels where they are read, in parallel."""
    global _rules
    _rules = rules


def _read(path: Path) -> list[Pair] | str:
    """Reader: one report's kernels, classified, or the one-line error that stopped it."""
    from .report_reader import read_report

    assert _rules is not None, "_use_rules() first"
    try:
        rows = read_report(path).kernels
    except ReportError as exc:
        return str(exc)
    return [(row, kernel_card(row, _rules)) for row in rows]


def _read_batch(batch: list[tuple[int, Path]]) -> list[tuple[int, list[Pair] | str]]:
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
    paths: list[Path], jobs: int, rules: LoadedRules, progress: Progress | None = None
) -> list[list[Pair] | str]:
    """Classified rows of every report, in the order given, read by up to `jobs` processes.

    ncu_report keeps about 0.4 MB per kernel it has handed out until its process ends (even
    after the report is released), so with several jobs reports are read in batches by child
    processes that exit after one batch: memory stays bounded however many reports there are.
    A batch whose child dies (a native crash on a hostile report) is read again one report per
    child, so that the crash is pinned on its report and the others are still read.
    """
    workers = max(1, min(jobs, len(paths)))
    batches = reader_batches(paths, workers)
    _use_rules(rules)
    if workers == 1 or len(batches) <= 1 or _threaded():
        # Read here: asked for one process, or one reader's share, or fork is unsafe. With
        # --jobs 1 memory grows by ncu_report's 0.4 MB per kernel; workers bound it instead.
        serial = []
        for done, path in enumerate(paths, 1):
            serial.append(_read(path))
            if progress:
                progress(done, len(paths))
        return serial
    results: list[list[Pair] | str] = ["" for _ in paths]
    if len(batches) > workers:  # recycled workers: pay ncu_report's start once, before forking
        from .report_reader import warm_up

        warm_up(paths[0])
    retry: list[list[tuple[int, Path]]] = []
    done = 0
    for tasks in (batches, retry):
        for number, outcome in run_in_children(_read_batch, tasks, workers):
            if not isinstance(outcome, WorkerFailure):
                for index, result in outcome:
                    results[index] = result
                done += len(outcome)
                if progress:
                    progress(done, len(paths))
            elif len(tasks[number]) > 1:
                retry.extend([item] for item in tasks[number])
            else:
                index, path = tasks[number][0]
                results[index] = f"{path}: the report reader failed on it: {outcome.reason}"
                done += 1
    return results


def _shape_card(shape: ShapeRecord, pairs: list[Pair], rules: LoadedRules, reads: Reads) -> Card:
    records, kernels = [p[0] for p in pairs], [p[1] for p in pairs]
    error = shape.error if shape.status != "ok" else None
    stem = report_stem(shape.report) if shape.report else None
    path = next((p for p in reads.source.reports if report_stem(p) == stem), None)
    if shape.status == "ok" and path is not None and path in reads.failed:
        error = f"its report could not be read: {reads.failed[path]}"
    elif shape.status == "ok" and not records and shape.report:
        error = f"no kernel of range {shape.group!r} found in {shape.report}"
    elif shape.status == "ok" and shape.kernels is not None and len(records) != shape.kernels:
        error = (
            f"{len(records)} kernels of this range in the report, but capture counted"
            f" {shape.kernels}: report incomplete?"
        )
    report = str(path) if path is not None else shape.report
    return build_card(
        group=shape.group,
        stage=shape.stage,
        op=shape.op,
        kernels=kernels,
        rules=rules,
        records=records,
        shape_parameters={
            **shape.shape_parameters,
            **({"backend_used": shape.backend_used} if shape.backend_used else {}),
        },
        note=shape.note,
        input_sha256=shape.input_sha256,
        ncu_output=report,
        nominal_mac_flops=shape.nominal_mac_flops,
        nominal_bytes=shape.nominal_bytes,
        error=error,
    )


def _foreign_cards(pairs: list[Pair], rules: LoadedRules, labels: dict[str, str]) -> list[Card]:
    """Cards for kernels no manifest claims: per innermost NVTX range, else per kernel name;
    the stage is the report's label (its stem, or more where stems clash)."""
    groups: dict[tuple[str, str, str], list[Pair]] = {}
    for rec, card in pairs:
        stem = labels.get(rec.report) or report_stem(rec.report)
        if rec.nvtx_ranges:
            key = (stem, "nvtx_range", "/".join(rec.nvtx_ranges))
        else:
            key = (stem, "kernel", rec.function)
        groups.setdefault(key, []).append((rec, card))
    return [
        build_card(
            group=f"{stem}:{name}",
            stage=stem,
            op=kind,
            rules=rules,
            records=[p[0] for p in members],
            kernels=[p[1] for p in members],
            ncu_output=members[0][0].report,
        )
        for (stem, kind, name), members in groups.items()
    ]


@dataclass
class Reads:
    """What reading gave for one source: kernels per report, errors per failed report."""

    source: Source
    ok: dict[Path, list[Pair]]
    failed: dict[Path, str]
    labels: dict[str, str]


def cards_for_source(reads: Reads, rules: LoadedRules) -> list[Card]:
    """Cards of one source: the manifest's shapes first, then anything unclaimed."""
    source = reads.source
    pairs = [pair for path in source.reports if path in reads.ok for pair in reads.ok[path]]
    if source.manifest is None:
        return _foreign_cards(pairs, rules, reads.labels)
    # Key kernels by (report, range): after --resume a range can sit in an older report too
    # (a crashed first attempt); a shape takes the kernels of the report its record names.
    by_range: dict[tuple[str, str], list[Pair]] = {}
    for pair in pairs:
        ranges = pair[0].nvtx_ranges
        key = (report_stem(pair[0].report), ranges[-1] if ranges else "")
        by_range.setdefault(key, []).append(pair)
    cards = []
    for shape in source.manifest.shapes:
        stem = report_stem(shape.report) if shape.report else ""
        cards.append(_shape_card(shape, by_range.pop((stem, shape.group), []), rules, reads))
    leftovers = [pair for members in by_range.values() for pair in members]
    return cards + _foreign_cards(leftovers, rules, reads.labels)


def classify(
    paths: list[Path],
    rules: LoadedRules,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> CardFile:
    """Read every report under `paths` and build the cards file (input errors listed in it).
    An invalid capture manifest raises ManifestError before any report is read."""
    inputs = collect_inputs(paths)
    all_reports = inputs.reports()
    results = read_all(all_reports, jobs or os.cpu_count() or 1, rules, progress)
    ok: dict[Path, list[Pair]] = {}
    failed: dict[Path, str] = {}
    for path, result in zip(all_reports, results, strict=True):
        if isinstance(result, str):
            inputs.errors.append(result)
            failed[path] = result
        else:
            ok[path] = result
    labels = {str(p): label for p, label in inputs.labels.items()}
    cards = [
        card
        for source in inputs.sources
        for card in cards_for_source(Reads(source, ok, failed, labels), rules)
    ]
    summary, by_stage = count_classes(map(card_class, cards))
    return CardFile(
        generated_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        tool_version=__version__,
        rules=rules.rules.summary_text(),
        rules_id=rules.rules.id,
        rules_file=rules.path,
        rules_sha256=rules.sha256,
        inputs=[str(p) for p in paths],
        input_errors=inputs.errors,
        input_warnings=inputs.warnings + duplicate_groups(cards),
        cards=cards,
        summary=summary,
        by_stage=by_stage,
    )


def duplicate_groups(cards: list[Card]) -> list[str]:
    """A warning per group id that more than one card carries (two copies of one capture)."""
    counts: dict[str, int] = {}
    for card in cards:
        counts[card.group] = counts.get(card.group, 0) + 1
    return [f"group {g!r} appears in {n} cards" for g, n in counts.items() if n > 1]
