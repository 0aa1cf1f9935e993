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
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import __version__
from .errors import EnvironmentProblem, UsageError
from .manifest import (
    MANIFEST_NAME,
    BatchRecord,
    Manifest,
    ShapeRecord,
    read_manifest,
    write_manifest,
)
from .metrics import capture_metric_names
from .ncu_cmd import ncu_argv
from .shapes import InputSpec, ShapeEntry, ShapesFile, load_shapes

Progress = Callable[[int, int, str, str], None]  # done, total, group, status
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Batch:
    """The shapes one ncu process replays: here, one stage."""

    name: str
    entries: list[ShapeEntry]


def plan_batches(
    entries: list[ShapeEntry],
    max_batch: int = 0,
    taken: frozenset[str] = frozenset(),
    per_stage: bool = True,
) -> list[Batch]:
    """One batch per stage in file order (or one for all, named `all`), cut into chunks of
    `max_batch` shapes; names avoid `taken` (reports already in the folder, on --resume)."""
    by_stage: dict[str, list[ShapeEntry]] = {}
    for entry in entries:
        by_stage.setdefault(entry.stage if per_stage else "all", []).append(entry)
    batches = []
    for stage, members in by_stage.items():
        size = max_batch or len(members)
        chunks = [members[i : i + size] for i in range(0, len(members), size)]
        for number, chunk in enumerate(chunks, 1):
            name = stage if len(chunks) == 1 else f"{stage}-{number}"
            attempt = 1
            while name in taken:
                attempt += 1
                name = f"{stage}-{number}.r{attempt}" if len(chunks) > 1 else f"{stage}.r{attempt}"
            batches.append(Batch(name, chunk))
    return batches


def draw_cost(entry: ShapeEntry) -> float:
    """Rough seconds to generate and hash a shape's inputs on the CPU (~80 M elements/s on
    the H200 hosts, measured on the workload's attention buffers)."""
    return sum(math.prod(dims) for dims, _, _ in entry.shape.inputs()) / 8e7


def run_cost(entry: ShapeEntry) -> float:
    """Rough seconds a shape adds besides its inputs: a fixed part and its kernels under 9
    replay passes (~50 TFLOP/s)."""
    return 0.5 + 9 * entry.shape.nominal_flops() / 5e14


def input_units(entries: list[ShapeEntry]) -> list[list[tuple[int, ShapeEntry]]]:
    """Shapes (with their file positions) grouped by the inputs they draw, in order of first
    appearance: a unit goes to one GPU whole and replays back to back, so its shapes share one
    draw (the FA2 and FA3 variants of an attention shape draw the same 1.4 GB)."""
    units: dict[tuple[str, tuple[InputSpec, ...]], list[tuple[int, ShapeEntry]]] = {}
    for index, entry in enumerate(entries):
        key = (entry.shape.op, tuple(entry.shape.inputs()))
        units.setdefault(key, []).append((index, entry))
    return list(units.values())


def gpu_batches(
    entries: list[ShapeEntry], gpus: int, max_batch: int = 0, taken: frozenset[str] = frozenset()
) -> list[Batch]:
    """One process per GPU (`gpu1`, `gpu2`, ...): units of shapes that draw the same inputs,
    dealt costliest first to the GPU with the least estimated work, in file order within each
    GPU (a unit's shapes together, at its first one); cut by `max_batch` if given."""
    shares: list[list[list[tuple[int, ShapeEntry]]]] = [[] for _ in range(gpus)]
    loads = [0.0] * gpus
    costed = [(unit_cost(unit), unit) for unit in input_units(entries)]
    for cost, unit in sorted(costed, key=lambda c: -c[0]):
        lightest = loads.index(min(loads))
        shares[lightest].append(unit)
        loads[lightest] += cost
    batches = []
    for number, share in enumerate(shares, 1):
        members = [entry for unit in sorted(share, key=lambda u: u[0][0]) for _, entry in unit]
        for batch in plan_batches(members, max_batch, frozenset(), per_stage=False):
            name = batch.name.replace("all", f"gpu{number}", 1)
            while name in taken:
                name += ".r"
            batches.append(Batch(name, batch.entries))
    return [b for b in batches if b.entries]


def unit_cost(unit: list[tuple[int, ShapeEntry]]) -> float:
    """Estimated seconds of a unit: its inputs are drawn once, then each shape runs."""
    return draw_cost(unit[0][1]) + sum(run_cost(entry) for _, entry in unit)


def select_shard(entries: list[ShapeEntry], index: int, count: int) -> list[ShapeEntry]:
    """Shard `index` of `count` (1-based): shapes whose group id hashes to it. Stable when the
    file grows or is reordered, so a job array can fan out over hosts."""
    if not 1 <= index <= count:
        raise UsageError(f"--shard {index}/{count}: K must be between 1 and N")
    return [
        e
        for e in entries
        if int(hashlib.sha256(e.group.encode()).hexdigest(), 16) % count == index - 1
    ]


def shape_record(entry: ShapeEntry) -> ShapeRecord:
    """Manifest record of a shape before it is replayed."""
    params = entry.shape.model_dump(by_alias=True, exclude={"op", "name", "note"})
    if hasattr(entry.shape, "output"):
        params["output"] = entry.shape.output()
    return ShapeRecord(
        group=entry.group,
        stage=entry.stage,
        op=entry.shape.aten_op(),
        shape_parameters=params,
        nominal_mac_flops=entry.shape.nominal_flops(),
        nominal_bytes=entry.shape.nominal_bytes(),
        note=entry.shape.note,
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


@dataclass(frozen=True)
class CaptureOptions:
    """How to run a capture (everything but the shapes and the output folder)."""

    ncu: str = "ncu"
    python: str = sys.executable
    timeout_s: float = 3600.0
    gpus: tuple[int, ...] = ()  # CUDA device indices; empty: the default device only
    shard: tuple[int, int] = (1, 1)  # K of N
    max_batch: int = 0  # shapes per ncu process; 0: no limit
    per_stage: bool = True  # one ncu process per stage; False: as few processes as possible
    resume: bool = False


@dataclass
class Plan:
    """What a capture will run: the batches, their command lines, and the shapes kept."""

    shapes: ShapesFile
    batches: list[Batch]
    argv: dict[str, list[str]]
    kept: list[ShapeRecord]
    previous: Manifest | None


def batch_argv(batch: Batch, out: Path, options: CaptureOptions) -> list[str]:
    """The exact ncu command line of a batch."""
    work = out / ".work"
    target = [
        options.python,
        "-m",
        "ncu_classify.replay",
        str(work / f"{batch.name}.batch.json"),
        str(work / f"{batch.name}.status.jsonl"),
    ]
    return ncu_argv(
        ncu=options.ncu,
        report_stem=work / f"{batch.name}.partial",
        metrics=capture_metric_names(),
        groups=[e.group for e in batch.entries],
        target=target,
    )


def plan_capture(shapes_path: Path, out: Path, options: CaptureOptions) -> Plan:
    """Shapes of this shard, minus (on --resume) those already captured, as batches."""
    shapes = load_shapes(shapes_path)
    entries = select_shard(shapes.entries(), *options.shard)
    previous, kept, taken = None, [], frozenset[str]()
    manifest_path = out / MANIFEST_NAME
    if manifest_path.exists():
        if not options.resume:
            raise UsageError(
                f"{out} already holds a capture: pass --resume to finish it,"
                " or choose another output folder"
            )
        previous = read_manifest(manifest_path)
        done = {
            r.group: r
            for r in previous.shapes
            if r.status == "ok" and r.report and (out / r.report).exists()
        }
        kept = [done[e.group] for e in entries if e.group in done]
        entries = [e for e in entries if e.group not in done]
        taken = frozenset(b.name for b in previous.batches)
    if not options.per_stage and len(options.gpus) > 1:
        batches = gpu_batches(entries, len(options.gpus), options.max_batch, taken)
    else:
        batches = plan_batches(entries, options.max_batch, taken, options.per_stage)
    argv = {b.name: batch_argv(b, out, options) for b in batches}
    return Plan(shapes, batches, argv, kept, previous)


def replay_env(gpu: int | None, parallel: int) -> dict[str, str]:
    """Environment of one ncu process: this package importable, its GPU alone visible, and,
    when `parallel` processes share the host, torch's CPU threads split between them (unless
    OMP_NUM_THREADS is set) so that their input generation does not oversubscribe the cores."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    if parallel > 1:
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // parallel)))
    return env


def run_batch(
    batch: Batch,
    out: Path,
    plan: Plan,
    options: CaptureOptions,
    gpu: int | None,
    on_shape: Callable[[str, str], None],
) -> tuple[BatchRecord, list[dict[str, Any]]]:
    """Run one ncu process over a batch; return its record and the replay status lines."""
    work = out / ".work"
    work.mkdir(parents=True, exist_ok=True)
    status_file = work / f"{batch.name}.status.jsonl"
    status_file.unlink(missing_ok=True)
    (work / f"{batch.name}.batch.json").write_text(
        json.dumps(
            {
                "seed": plan.shapes.seed,
                "warmup": plan.shapes.warmup,
                "cudnn_benchmark": plan.shapes.cudnn_benchmark,
                "entries": [e.model_dump(mode="json", by_alias=True) for e in batch.entries],
            }
        )
    )
    argv = plan.argv[batch.name]
    log = out / f"{batch.name}.ncu.log"
    env = replay_env(gpu, len(options.gpus))
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
                offset = _poll(status_file, offset, lines, on_shape)
                if time.monotonic() - started > options.timeout_s:
                    _stop(proc)
                    break
                time.sleep(0.5)
        except BaseException:
            _stop(proc)
            raise
    _poll(status_file, offset, lines, on_shape)
    report = out / f"{batch.name}.ncu-rep"
    produced = work / f"{batch.name}.partial.ncu-rep"
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
        gpu=gpu,
    )
    _check_permissions(log)
    return record, lines


def _poll(
    status_file: Path,
    offset: int,
    lines: list[dict[str, Any]],
    on_shape: Callable[[str, str], None],
) -> int:
    new, offset = _read_status(status_file, offset)
    for line in new:
        lines.append(line)
        if line.get("kind") == "shape":
            on_shape(line["group"], line["status"])
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
            rec.backend_used = line.get("backend_used")
            rec.replay_seconds = line.get("seconds")
            rec.report = batch.report or None
            if rec.status == "ok" and not batch.report:
                rec.status = "failed"
                rec.error = (
                    f"replayed, but ncu wrote no report (exit code {batch.exit_code};"
                    f" disk full? see {batch.log})"
                )
    missing = [g for g in batch.groups if g not in seen]
    for position, group in enumerate(missing):
        rec = records[group]
        rec.status = "failed"
        why = "crashed or was killed during its replay" if position == 0 else "not reached"
        rec.error = f"{why} (ncu exit code {batch.exit_code}; see {batch.log})"
    return env


def count_kernels(out: Path, records: dict[str, ShapeRecord], reports: list[str]) -> None:
    """Count profiled kernels and replay passes per shape in this run's reports; an ok shape
    with none has failed (its NVTX range matched nothing)."""
    try:
        from .report_reader import read_report
    except ImportError:  # ncu_report not installed on the capture host: counts stay unknown
        return
    for report in reports:
        for kernel in read_report(out / report).kernels:
            rec = records.get(kernel.nvtx_ranges[-1] if kernel.nvtx_ranges else "")
            if rec is not None:
                rec.kernels = (rec.kernels or 0) + 1
                if kernel.replay_passes is not None:
                    rec.replay_passes.append(kernel.replay_passes)
    for rec in records.values():
        if rec.report in reports and rec.status == "ok" and not rec.kernels:
            rec.kernels = 0
            rec.status = "failed"
            rec.error = "no kernel was profiled inside its NVTX range"


MIN_NCU = (2023, 1)


def check_environment(options: CaptureOptions) -> tuple[str, str, list[dict[str, str]]]:
    """ncu path and version and the GPUs, or an EnvironmentProblem saying how to fix it."""
    ncu_path = find_ncu(options.ncu)
    version = ncu_version(ncu_path)
    parts = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if len(parts) == 2 and parts < MIN_NCU:
        raise EnvironmentProblem(
            f"ncu {version} at {ncu_path} is too old: ncu-classify needs Nsight Compute"
            f" {MIN_NCU[0]}.{MIN_NCU[1]} or newer (pass --ncu PATH to pick another)"
        )
    gpus = gpu_inventory()
    indices = [int(g["index"]) for g in gpus]
    for wanted in options.gpus:
        if wanted not in indices:
            raise EnvironmentProblem(
                f"GPU index {wanted} is out of range: this host has {len(gpus)} GPU(s),"
                f" indices {', '.join(map(str, indices))}"
            )
    return ncu_path, version, gpus


def _schedule(batches: list[Batch], gpus: tuple[int, ...]) -> dict[int | None, list[Batch]]:
    """Batches per GPU, largest first to the GPU with the fewest shapes queued."""
    if not gpus:
        return {None: list(batches)}
    queues: dict[int | None, list[Batch]] = {g: [] for g in gpus}
    for batch in sorted(batches, key=lambda b: -len(b.entries)):
        lightest = min(queues, key=lambda g: sum(len(b.entries) for b in queues[g]))
        queues[lightest].append(batch)
    return queues


def capture(
    shapes_path: Path,
    out: Path,
    options: CaptureOptions | None = None,
    progress: Progress | None = None,
) -> Manifest:
    """Replay the shapes of `shapes_path` under ncu into `out`; return the written manifest.

    Batches run one ncu process each; with several GPUs one queue per GPU runs in parallel
    (ncu serialises profiling per GPU through a lock file named after the GPU's UUID, so one
    ncu per GPU is the most that helps). The manifest is rewritten after every batch.
    """
    options = options or CaptureOptions()
    plan = plan_capture(shapes_path, out, options)
    ncu_path, version, gpus = check_environment(options)
    options = replace(options, ncu=ncu_path)
    plan.argv = {b.name: batch_argv(b, out, options) for b in plan.batches}
    out.mkdir(parents=True, exist_ok=True)
    records = {r.group: r for r in plan.kept}
    records.update({e.group: shape_record(e) for b in plan.batches for e in b.entries})
    manifest = plan.previous or Manifest(
        tool_version=__version__,
        created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        shapes_file=str(shapes_path),
        shapes_sha256=hashlib.sha256(shapes_path.read_bytes()).hexdigest(),
        seed=plan.shapes.seed,
        warmup=plan.shapes.warmup,
        cudnn_benchmark=plan.shapes.cudnn_benchmark,
        metrics=capture_metric_names(),
        shapes=[],
    )
    order = [e.group for e in select_shard(plan.shapes.entries(), *options.shard)]
    manifest.shapes = [records[g] for g in order if g in records]
    manifest.shard = f"{options.shard[0]}/{options.shard[1]}"
    manifest.host.update(gpus=gpus, ncu=version, ncu_path=ncu_path, python=sys.version.split()[0])
    write_manifest(out, manifest)
    lock = threading.Lock()
    total, done = sum(len(b.entries) for b in plan.batches), [0]
    notify = progress or (lambda *_: None)

    def on_shape(group: str, status: str) -> None:
        with lock:
            done[0] += 1
            notify(done[0], total, group, status)

    def run_queue(gpu: int | None, queue: list[Batch]) -> None:
        for batch in queue:
            record, lines = run_batch(batch, out, plan, options, gpu, on_shape)
            with lock:
                manifest.batches.append(record)
                manifest.host.update(apply_status(records, record, lines))
                write_manifest(out, manifest)

    queues = _schedule(plan.batches, options.gpus)
    if len(queues) == 1:
        run_queue(*next(iter(queues.items())))
    else:
        _run_parallel(queues, run_queue)
    reports = sorted({b.report for b in manifest.batches if b.report and b.name in plan.argv})
    count_kernels(out, records, reports)
    write_manifest(out, manifest)
    return manifest


def _run_parallel(
    queues: dict[int | None, list[Batch]], run_queue: Callable[[int | None, list[Batch]], None]
) -> None:
    """One thread per GPU queue; the first error stops nothing already running but is raised."""
    errors: list[BaseException] = []

    def guarded(gpu: int | None, queue: list[Batch]) -> None:
        try:
            run_queue(gpu, queue)
        except BaseException as exc:  # re-raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=item, daemon=True) for item in queues.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
