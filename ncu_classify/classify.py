"""classify: report files or capture folders -> kernel rows -> classified cards.

A folder with a capture `manifest.json` yields one card per captured shape, in manifest order,
its kernels found by NVTX range. Any other report (a user's own ncu run) yields one card per
NVTX push/pop range, or per kernel name when there is none. Reports are read in parallel, one
process per report, and merged in input order so the output does not depend on timing.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .cards import Card, CardFile, KernelCard, build_card, card_class, count_classes, kernel_card
from .errors import NcuClassifyError, ReportError
from .manifest import MANIFEST_NAME, Manifest, ShapeRecord, read_manifest
from .records import KernelRecord
from .rules import LoadedRules
from .workers import WorkerFailure, run_in_children

REPORTS_PER_WORKER = 256
BYTES_PER_WORKER = 1 << 30
REPORT_SUFFIXES = (".ncu-rep", ".ncu-rep.xz", ".ncu-rep.gz", ".ncu-rep.bz2")


def is_report(path: Path) -> bool:
    """True for a file name classify reads as an Nsight Compute report."""
    return path.name.endswith(REPORT_SUFFIXES)


def report_stem(path: Path | str) -> str:
    """`vae` for `raw/vae.ncu-rep.xz`."""
    name = Path(path).name
    for suffix in REPORT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@dataclass
class Source:
    """Reports to read, with the capture manifest of their folder when there is one."""

    reports: list[Path]
    manifest: Manifest | None = None
    folder: Path | None = None


@dataclass
class Inputs:
    """Everything `classify` was asked to read, and the inputs that were rejected up front."""

    sources: list[Source] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def collect_inputs(paths: Iterable[Path]) -> Inputs:
    """Expand files and folders into sources; bad paths become error lines, not exceptions."""
    inputs = Inputs()
    for path in paths:
        if path.is_dir():
            reports = sorted(p for p in path.iterdir() if p.is_file() and is_report(p))
            manifest_path = path / MANIFEST_NAME
            try:
                manifest = read_manifest(manifest_path) if manifest_path.exists() else None
            except NcuClassifyError as exc:
                inputs.errors.append(str(exc))
                manifest = None
            if not reports and manifest is None:
                inputs.errors.append(f"{path}: folder holds no .ncu-rep report")
                continue
            inputs.sources.append(Source(reports, manifest, path))
        elif path.is_file() and is_report(path):
            inputs.sources.append(Source([path]))
        elif path.exists():
            inputs.errors.append(f"{path}: not a report (expected *.ncu-rep, .ncu-rep.xz or .gz)")
        else:
            inputs.errors.append(f"{path}: no such file or folder")
    return inputs


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
    """Rough uncompressed size (xz and gzip shrink reports about 16x)."""
    size = path.stat().st_size
    return size if path.name.endswith(".ncu-rep") else 16 * size


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


def read_all(paths: list[Path], jobs: int, rules: LoadedRules) -> list[list[Pair] | str]:
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
        return [_read(path) for path in paths]
    results: list[list[Pair] | str] = ["" for _ in paths]
    if len(batches) > workers:  # recycled workers: pay ncu_report's start once, before forking
        from .report_reader import warm_up

        warm_up(paths[0])
    retry: list[list[tuple[int, Path]]] = []
    for tasks in (batches, retry):
        for number, outcome in run_in_children(_read_batch, tasks, workers):
            if not isinstance(outcome, WorkerFailure):
                for index, result in outcome:
                    results[index] = result
            elif len(tasks[number]) > 1:
                retry.extend([item] for item in tasks[number])
            else:
                index, path = tasks[number][0]
                results[index] = f"{path}: the report reader failed on it: {outcome.reason}"
    return results


def _shape_card(
    shape: ShapeRecord, pairs: list[Pair], rules: LoadedRules, reports: list[Path]
) -> Card:
    records, kernels = [p[0] for p in pairs], [p[1] for p in pairs]
    error = shape.error if shape.status != "ok" else None
    if shape.status == "ok" and not records and shape.report:
        error = f"no kernel of range {shape.group!r} found in {shape.report}"
    elif shape.status == "ok" and shape.kernels is not None and len(records) != shape.kernels:
        error = (
            f"{len(records)} kernels of this range in the report, but capture counted"
            f" {shape.kernels}: report incomplete?"
        )
    stem = report_stem(shape.report) if shape.report else None
    report = next((str(p) for p in reports if report_stem(p) == stem), shape.report)
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


def _foreign_cards(pairs: list[Pair], rules: LoadedRules) -> list[Card]:
    """Cards for kernels no manifest claims: per innermost NVTX range, else per kernel name."""
    groups: dict[tuple[str, str, str], list[Pair]] = {}
    for rec, card in pairs:
        stem = report_stem(rec.report)
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


def cards_for_source(
    source: Source, reads: dict[Path, list[Pair]], rules: LoadedRules
) -> list[Card]:
    """Cards of one source: the manifest's shapes first, then anything unclaimed."""
    pairs = [pair for path in source.reports if path in reads for pair in reads[path]]
    if source.manifest is None:
        return _foreign_cards(pairs, rules)
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
        cards.append(
            _shape_card(shape, by_range.pop((stem, shape.group), []), rules, source.reports)
        )
    leftovers = [pair for members in by_range.values() for pair in members]
    return cards + _foreign_cards(leftovers, rules)


def classify(paths: list[Path], rules: LoadedRules, jobs: int | None = None) -> CardFile:
    """Read every report under `paths` and build the cards file (input errors listed in it)."""
    inputs = collect_inputs(paths)
    all_reports = [p for s in inputs.sources for p in s.reports]
    reads: dict[Path, list[Pair]] = {}
    results = read_all(all_reports, jobs or os.cpu_count() or 1, rules)
    for path, result in zip(all_reports, results, strict=True):
        if isinstance(result, str):
            inputs.errors.append(result)
        else:
            reads[path] = result
    cards = [card for s in inputs.sources for card in cards_for_source(s, reads, rules)]
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
        cards=cards,
        summary=summary,
        by_stage=by_stage,
    )
