"""Capture: replay every shape under ncu, one ncu process per stage, and write the manifest.

The ncu process writes its output to a log file, never to a pipe we wait on; we poll the replay
status file for progress and kill the whole process group at the deadline. Reports are written
under a temporary name and renamed when ncu is done, so a folder never holds half a report
under a final name.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .errors import EnvironmentProblem
from .manifest import BatchRecord, Manifest, ShapeRecord, write_manifest
from .metrics import capture_metric_names
from .ncu_cmd import ncu_argv
from .shapes import ShapeEntry, ShapesFile, load_shapes

Progress = Callable[[int, int, str, str], None]  # done, total, group, status
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Batch:
    """The shapes one ncu process replays: here, one stage."""

    name: str
    entries: list[ShapeEntry]


def plan_batches(shapes: ShapesFile) -> list[Batch]:
    """One batch per stage, in file order."""
    by_stage: dict[str, list[ShapeEntry]] = {}
    for entry in shapes.entries():
        by_stage.setdefault(entry.stage, []).append(entry)
    return [Batch(stage, entries) for stage, entries in by_stage.items()]


def shape_record(entry: ShapeEntry) -> ShapeRecord:
    """Manifest record of a shape before it is replayed."""
    params = entry.shape.model_dump(by_alias=True, exclude={"op", "name"})
    if hasattr(entry.shape, "output"):
        params["output"] = entry.shape.output()
    return ShapeRecord(
        group=entry.group,
        stage=entry.stage,
        op=entry.shape.aten_op(),
        shape_parameters=params,
        nominal_mac_flops=entry.shape.nominal_flops(),
        nominal_bytes=entry.shape.nominal_bytes(),
    )


def find_ncu(ncu: str) -> str:
    """Absolute path of ncu, or an EnvironmentProblem saying how to get it."""
    found = shutil.which(ncu)
    if not found:
        raise EnvironmentProblem(
            f"ncu not found ({ncu!r} is not on PATH): install Nsight Compute or pass --ncu PATH"
        )
    return found


def ncu_version(ncu: str) -> str:
    """The version ncu prints, e.g. '2025.3.1.0'."""
    out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"Version\s+([\d.]+)", out)
    return match.group(1) if match else out.strip().splitlines()[-1] if out.strip() else "unknown"


def gpu_inventory() -> list[dict[str, str]]:
    """GPUs as nvidia-smi lists them (index, name, driver, uuid); an EnvironmentProblem if none."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name,driver_version,uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise EnvironmentProblem(f"no NVIDIA GPU visible (nvidia-smi failed: {exc})") from None
    rows = [[c.strip() for c in line.split(",")] for line in out.strip().splitlines() if line]
    if not rows:
        raise EnvironmentProblem("no NVIDIA GPU visible: nvidia-smi lists none")
    return [dict(zip(("index", "name", "driver", "uuid"), row, strict=False)) for row in rows]


def _read_status(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Complete JSON lines appended to the status file since `offset`."""
    if not path.exists():
        return [], offset
    with path.open("rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n") + 1
    lines = [json.loads(line) for line in data[:end].splitlines() if line.strip()]
    return lines, offset + end


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill ncu and its target together (they share a process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_batch(
    batch: Batch,
    out: Path,
    shapes: ShapesFile,
    *,
    ncu: str,
    python: str,
    timeout_s: float,
    progress: Progress,
    done_before: int,
    total: int,
) -> tuple[BatchRecord, list[dict[str, Any]]]:
    """Run one ncu process over a batch; return its record and the replay status lines."""
    work = out / ".work"
    work.mkdir(parents=True, exist_ok=True)
    batch_file = work / f"{batch.name}.batch.json"
    status_file = work / f"{batch.name}.status.jsonl"
    status_file.unlink(missing_ok=True)
    batch_file.write_text(
        json.dumps(
            {
                "seed": shapes.seed,
                "warmup": shapes.warmup,
                "cudnn_benchmark": shapes.cudnn_benchmark,
                "entries": [e.model_dump(mode="json", by_alias=True) for e in batch.entries],
            }
        )
    )
    partial = work / f"{batch.name}.partial"
    target = [python, "-m", "ncu_classify.replay", str(batch_file), str(status_file)]
    argv = ncu_argv(
        ncu=ncu,
        report_stem=partial,
        metrics=capture_metric_names(),
        groups=[e.group for e in batch.entries],
        target=target,
    )
    log = out / f"{batch.name}.ncu.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    started = time.monotonic()
    lines: list[dict[str, Any]] = []
    offset = 0
    with log.open("wb") as log_handle:
        proc = subprocess.Popen(
            argv,
            stdout=log_handle,
            stderr=subprocess.STDOUT,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            while proc.poll() is None:
                offset = _poll(status_file, offset, lines, progress, done_before, total)
                if time.monotonic() - started > timeout_s:
                    _stop(proc)
                    break
                time.sleep(0.5)
        except BaseException:
            _stop(proc)
            raise
    _poll(status_file, offset, lines, progress, done_before, total)
    report = out / f"{batch.name}.ncu-rep"
    produced = partial.with_name(partial.name + ".ncu-rep")
    if produced.exists():
        os.replace(produced, report)
    record = BatchRecord(
        name=batch.name,
        report=report.name if report.exists() else "",
        argv=argv,
        exit_code=proc.returncode,
        wall_seconds=round(time.monotonic() - started, 2),
        log=log.name,
        groups=[e.group for e in batch.entries],
    )
    _check_permissions(log)
    return record, lines


def _poll(
    status_file: Path,
    offset: int,
    lines: list[dict[str, Any]],
    progress: Progress,
    done_before: int,
    total: int,
) -> int:
    new, offset = _read_status(status_file, offset)
    for line in new:
        lines.append(line)
        if line.get("kind") == "shape":
            done = done_before + sum(1 for x in lines if x.get("kind") == "shape")
            progress(done, total, line["group"], line["status"])
    return offset


def _check_permissions(log: Path) -> None:
    text = log.read_text(errors="replace")
    if "ERR_NVGPUCTRPERM" in text:
        raise EnvironmentProblem(
            "GPU performance counters are not permitted for this user (ERR_NVGPUCTRPERM): run as"
            " root or set NVreg_RestrictProfilingToAdminUsers=0; see log " + str(log)
        )


def apply_status(
    records: dict[str, ShapeRecord], batch: BatchRecord, lines: list[dict[str, Any]]
) -> dict[str, Any]:
    """Fold a batch's status lines into the shape records; returns the replay environment."""
    env: dict[str, Any] = {}
    seen: set[str] = set()
    for line in lines:
        if line.get("kind") == "env":
            env = {k: v for k, v in line.items() if k != "kind"}
        elif line.get("kind") == "shape":
            rec = records[line["group"]]
            seen.add(rec.group)
            rec.status = line["status"]
            rec.error = line.get("error")
            rec.input_sha256 = line.get("input_sha256")
            rec.replay_seconds = line.get("seconds")
            rec.report = batch.report or None
    missing = [g for g in batch.groups if g not in seen]
    for position, group in enumerate(missing):
        rec = records[group]
        rec.status = "failed"
        why = "crashed or was killed during its replay" if position == 0 else "not reached"
        rec.error = f"{why} (ncu exit code {batch.exit_code}; see {batch.log})"
    return env


def count_kernels(out: Path, records: dict[str, ShapeRecord]) -> None:
    """Count profiled kernels and replay passes per shape; an ok shape with none has failed."""
    try:
        from .report_reader import read_report
    except ImportError:  # ncu_report not installed on the capture host: counts stay unknown
        return
    for report in sorted({r.report for r in records.values() if r.report}):
        for kernel in read_report(out / report).kernels:
            rec = records.get(kernel.nvtx_ranges[-1] if kernel.nvtx_ranges else "")
            if rec is not None:
                rec.kernels = (rec.kernels or 0) + 1
                if kernel.replay_passes is not None:
                    rec.replay_passes.append(kernel.replay_passes)
    for rec in records.values():
        if rec.report and rec.status == "ok" and not rec.kernels:
            rec.kernels = 0
            rec.status = "failed"
            rec.error = "no kernel was profiled inside its NVTX range"


def capture(
    shapes_path: Path,
    out: Path,
    *,
    ncu: str = "ncu",
    python: str = sys.executable,
    timeout_s: float = 3600.0,
    progress: Progress | None = None,
) -> Manifest:
    """Replay every shape of `shapes_path` under ncu into `out`; return the written manifest."""
    shapes = load_shapes(shapes_path)
    ncu_path = find_ncu(ncu)
    gpus = gpu_inventory()
    out.mkdir(parents=True, exist_ok=True)
    batches = plan_batches(shapes)
    records = {e.group: shape_record(e) for b in batches for e in b.entries}
    manifest = Manifest(
        tool_version=__version__,
        created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        shapes_file=str(shapes_path),
        shapes_sha256=hashlib.sha256(shapes_path.read_bytes()).hexdigest(),
        seed=shapes.seed,
        warmup=shapes.warmup,
        cudnn_benchmark=shapes.cudnn_benchmark,
        host={
            "gpus": gpus,
            "ncu": ncu_version(ncu_path),
            "ncu_path": ncu_path,
            "python": sys.version.split()[0],
        },
        metrics=capture_metric_names(),
        shapes=list(records.values()),
    )
    write_manifest(out, manifest)
    notify = progress or (lambda *_: None)
    done = 0
    for batch in batches:
        record, lines = run_batch(
            batch,
            out,
            shapes,
            ncu=ncu_path,
            python=python,
            timeout_s=timeout_s,
            progress=notify,
            done_before=done,
            total=len(records),
        )
        done += len(batch.entries)
        manifest.batches.append(record)
        manifest.host.update(apply_status(records, record, lines))
        write_manifest(out, manifest)
    count_kernels(out, records)
    write_manifest(out, manifest)
    return manifest
