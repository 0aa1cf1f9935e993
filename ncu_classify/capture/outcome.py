"""What became of each shape: a batch's status lines folded into the shape records, and the
kernels, replay passes and measurements counted in the reports it wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import ReportError
from ..read.rows import KernelRow
from ..replay.protocol import ShapeLine
from .manifest import ManifestBatch, ManifestShape, Status


def apply_status(
    records: dict[str, ManifestShape],
    batch: ManifestBatch,
    lines: list[ShapeLine],
    env: dict[str, Any],
) -> dict[str, Any]:
    """Fold a batch's status lines into the shape records; returns the replay environment.

    A batch that ended by itself and left shapes without a line crashed on the first of them;
    one that was interrupted leaves them `pending`, so that --resume replays them. A times
    batch sets only the shapes' `times_*` fields."""
    seen: set[str] = set()
    for line in lines:
        seen.add(line.group)
        _apply_line(records[line.group], batch, line)
    missing = [g for g in batch.groups if g not in seen]
    if batch.ended_by in ("interrupted", "refused"):
        return env
    for position, group in enumerate(missing):
        if batch.ended_by == "timeout":
            why = "still running at the --timeout deadline" if position == 0 else "not reached"
        else:
            why = "crashed or was killed during its replay" if position == 0 else "not reached"
        _set_status(
            records[group],
            batch.kind,
            "failed",
            f"{why} (ncu exit code {batch.exit_code}; see {batch.log})",
        )
    return env


def _apply_line(rec: ManifestShape, batch: ManifestBatch, line: ShapeLine) -> None:
    """One status line into its shape's record. A shape replayed in a batch that was
    interrupted before ncu wrote any report stays `pending`: nothing of it was kept."""
    status, error = line.status, line.error
    if status == "ok" and not batch.report and batch.ended_by == "interrupted":
        _set_status(rec, batch.kind, "pending", None)  # never in a report: --resume replays it
        return
    if status == "ok" and not batch.report:
        status = "failed"
        error = (
            f"replayed, but ncu wrote no report (exit code {batch.exit_code};"
            f" disk full? see {batch.log})"
        )
    _set_status(rec, batch.kind, status, error)
    if batch.kind == "times":
        rec.times_report = batch.report or None
        return
    rec.input_sha256 = line.input_sha256
    rec.backend_used = line.backend_used
    rec.replay_seconds = line.seconds
    rec.replay_phases = line.phases
    rec.report = batch.report or None


def _set_status(rec: ManifestShape, kind: str, status: Status, error: str | None) -> None:
    if kind == "times":
        rec.times_status, rec.times_error = status, error
    else:
        rec.status, rec.error = status, error


def count_kernels(out: Path, records: dict[str, ManifestShape], reports: list[str]) -> None:
    """Count profiled kernels and replay passes per shape in this run's reports, and the
    measurements of each (repeats). An ok shape with no kernel has failed (its NVTX range
    matched nothing); so have the shapes of a report that cannot be read (truncated: ncu was
    killed while writing it)."""
    try:
        from ..read.kernels import read_report
    except ImportError:  # ncu_report not installed on the capture host: counts stay unknown
        return
    for report in reports:
        try:
            kernels = read_report(out / report).kernels
        except ReportError as exc:
            _fail_report(records, report, f"its report cannot be read: {exc}")
            continue
        _count(records, report, kernels)
    for rec in records.values():
        if rec.report in reports and rec.status == "ok" and not rec.kernels:
            rec.status = "failed"
            rec.error = "no kernel was profiled inside its NVTX range"
        if rec.times_report in reports and rec.times_status == "ok" and (rec.repeats or 0) < 2:
            rec.times_status = "failed"
            rec.times_error = "no kernel of its repeats was profiled"


def _count(records: dict[str, ManifestShape], report: str, kernels: list[KernelRow]) -> None:
    """Kernels, passes and measurements per shape of one report (counters or times)."""
    repeats: dict[str, set[int]] = {}
    for rec in records.values():
        if rec.report == report:
            rec.kernels, rec.replay_passes = 0, []
    for kernel in kernels:
        owner = records.get(kernel.nvtx_ranges[-1] if kernel.nvtx_ranges else "")
        if owner is None:
            continue
        repeats.setdefault(owner.group, set()).add(kernel.repeat or 1)
        if owner.report == report and kernel.repeat in (None, 1):
            owner.kernels = (owner.kernels or 0) + 1
            if kernel.replay_passes is not None:
                owner.replay_passes.append(kernel.replay_passes)
    for group, seen in repeats.items():
        owner = records[group]
        if owner.times_report == report or (owner.report == report and len(seen) > 1):
            owner.repeats = len(seen | ({1} if owner.times_report == report else set()))


def _fail_report(records: dict[str, ManifestShape], report: str, why: str) -> None:
    for rec in records.values():
        if rec.report == report and rec.status == "ok":
            rec.status, rec.error, rec.kernels = "failed", why, None
        if rec.times_report == report and rec.times_status == "ok":
            rec.times_status, rec.times_error = "failed", why
