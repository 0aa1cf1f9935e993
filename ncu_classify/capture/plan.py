"""Capture planning: which shapes run, in which ncu process, with which command line.

Pure functions over the shapes file and the options, so that `--dry-run` prints exactly what a
capture would run and tests need no GPU. A shape whose tensors cannot fit the GPU is refused
here, with the bytes it needs, before any process starts.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.errors import ShapesError, UsageError
from ..read.names import is_report_name, report_stem
from ..replay.protocol import InputDraws
from ..shapes.file import ShapeEntry, ShapesFile, load_shapes
from .batch import Batch
from .drill import capture_metrics, drill_entries, resolve_drill
from .manifest import (
    MANIFEST_NAME,
    DrillRequest,
    Manifest,
    ShapeRecord,
    ShardMethod,
    read_manifest,
)
from .ncu_cmd import ncu_argv
from .repeats import DURATION_METRIC, timed, with_times
from .shards import input_units, select_shard, unit_cost

# No GPU made has more memory (B300: 288 GB): the bound when the GPU is not known (dry run).
LARGEST_GPU_BYTES = 300 * 2**30


@dataclass(frozen=True)
class CaptureOptions:
    """How to run a capture (everything but the shapes and the output folder)."""

    ncu: str = "ncu"
    python: str = sys.executable
    timeout_s: float = 3600.0
    gpus: tuple[int, ...] = ()  # CUDA device indices; empty: the default device only
    shard: tuple[int, int] = (1, 1)  # K of N
    shard_method: ShardMethod = "cost_v1"  # --resume takes the capture's own (shards.py)
    max_batch: int = 0  # shapes per ncu process; 0: no limit
    per_stage: bool = True  # one ncu process per stage; False: as few processes as possible
    resume: bool = False
    # On Ctrl-C/SIGTERM: time for the shape in hand to finish before its target is killed;
    # under Slurm's default KillWait (30 s) ncu must have written its report by then.
    stop_grace_s: float = 20.0
    drill: DrillRequest | None = None  # only these shapes, with the warp-state counters
    repeat: int = 1  # launches measured per shape (--repeat)
    repeat_counters: bool = False  # each with the card metrics; else durations alone after one
    drop_sources: bool = False  # reports rewritten without their SASS and source (capture.slim)

    @property
    def timed_repeats(self) -> bool:
        """Whether a duration-only batch follows each counters batch."""
        return self.repeat > 1 and not self.repeat_counters


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


def gpu_batches(
    entries: list[ShapeEntry],
    gpus: tuple[int, ...],
    max_batch: int = 0,
    taken: frozenset[str] = frozenset(),
) -> list[Batch]:
    """One process per GPU, named after its device (`gpu0`, `gpu1`, ...): units of shapes that
    draw the same inputs, dealt costliest first to the GPU with the least estimated work, in
    file order within each GPU (a unit's shapes together, at its first one); cut by
    `max_batch` if given."""
    shares: list[list[list[tuple[int, ShapeEntry]]]] = [[] for _ in gpus]
    loads = [0.0] * len(gpus)
    costed = [(unit_cost(unit), unit) for unit in input_units(entries)]
    for cost, unit in sorted(costed, key=lambda c: -c[0]):
        lightest = loads.index(min(loads))
        shares[lightest].append(unit)
        loads[lightest] += cost
    batches = []
    for device, share in zip(gpus, shares, strict=True):
        members = [entry for unit in sorted(share, key=lambda u: u[0][0]) for _, entry in unit]
        for batch in plan_batches(members, max_batch, frozenset(), per_stage=False):
            name = batch.name.replace("all", f"gpu{device}", 1)
            while name in taken:
                name += ".r"
            batches.append(Batch(name, batch.entries, device))
    return [b for b in batches if b.entries]


def recorded_inputs(shapes_path: Path, entries: list[ShapeEntry]) -> list[ShapeEntry]:
    """Entries whose `inputs_file` (relative to the shapes file) is made absolute for the
    replay; a file that is not there is an error naming the shape."""
    out = []
    for entry in entries:
        given = entry.shape.inputs_file
        if given:
            path = (shapes_path.parent / given).resolve()
            if not path.is_file():
                raise ShapesError(f"{shapes_path}: {entry.group}: inputs_file {given} not found")
            shape = entry.shape.model_copy(update={"inputs_file": str(path)})
            entry = entry.model_copy(update={"shape": shape})
        out.append(entry)
    return out


@dataclass
class Plan:
    """What a capture will run: the batches, their command lines, and the shapes kept."""

    shapes: ShapesFile
    batches: list[Batch]
    argv: dict[str, list[str]]
    kept: list[ShapeRecord]
    previous: Manifest | None
    drill: DrillRequest | None = None  # the drill-down request, checked against the shapes
    repeat: int = 1  # launches measured per shape (--repeat)
    shard_method: ShardMethod = "cost_v1"  # how --shard picks this capture's shapes

    @property
    def input_draws(self) -> InputDraws:
        """The generator of seeded inputs: a resumed capture keeps its own."""
        return self.previous.input_draws if self.previous else "hashed_normal_v1"


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
        metrics=[DURATION_METRIC] if batch.kind == "times" else capture_metrics(options.drill),
        groups=[e.group for e in batch.entries],
        target=target,
    )


def check_capture(shapes_path: Path, out: Path, options: CaptureOptions) -> None:
    """What is refused before the host is probed (no plan is made): a bad shapes file or
    shard, a shape too large for any GPU, a folder that holds a capture without --resume."""
    shapes = load_shapes(shapes_path)
    drill = resolve_drill(options.drill, {e.group for e in shapes.entries()})
    _refuse_unasked_resume(out, options)
    method = resumed_method(out, options)
    entries = drill_entries(select_shard(shapes.entries(), *options.shard, method), drill)
    check_fits(shapes_path, recorded_inputs(shapes_path, entries), LARGEST_GPU_BYTES)


def resumed_method(out: Path, options: CaptureOptions) -> ShardMethod:
    """The shard method of the capture --resume continues (its manifest's), else the option's."""
    path = out / MANIFEST_NAME
    if options.resume and path.exists():
        return read_manifest(path).shard_method
    return options.shard_method


def _refuse_unasked_resume(out: Path, options: CaptureOptions) -> None:
    """A folder that already holds a capture is finished with --resume only."""
    if (out / MANIFEST_NAME).exists() and not options.resume:
        raise UsageError(
            f"{out} already holds a capture: pass --resume to finish it,"
            " or choose another output folder"
        )


def plan_capture(
    shapes_path: Path, out: Path, options: CaptureOptions, gpu_bytes: int | None = None
) -> Plan:
    """Shapes of this shard, minus (on --resume) those already captured, as batches; every
    shape must fit in `gpu_bytes` (the smallest GPU used; unknown: the largest GPU made)."""
    shapes = load_shapes(shapes_path)
    drill = resolve_drill(options.drill, {e.group for e in shapes.entries()})
    _refuse_unasked_resume(out, options)
    options = replace(options, drill=drill, shard_method=resumed_method(out, options))
    entries = select_shard(shapes.entries(), *options.shard, options.shard_method)
    entries = drill_entries(entries, drill)
    entries = recorded_inputs(shapes_path, entries)
    check_fits(shapes_path, entries, gpu_bytes or LARGEST_GPU_BYTES)
    previous, kept, untimed = None, [], []
    taken = _names_in(out)  # never write over a report or log already there
    manifest_path = out / MANIFEST_NAME
    if manifest_path.exists():
        previous = read_manifest(manifest_path)
        check_resumable(previous, shapes, shapes_sha256(shapes_path), options, out)
        done = {
            r.group: r
            for r in previous.shapes
            if r.status == "ok" and r.report and (out / r.report).exists()
        }
        kept = [done[e.group] for e in entries if e.group in done]
        untimed = [e for e in entries if e.group in done and not timed(done[e.group], out)]
        entries = [e for e in entries if e.group not in done]
        taken |= frozenset(b.name for b in previous.batches)
    if not options.per_stage and len(options.gpus) > 1:
        batches = gpu_batches(entries, options.gpus, options.max_batch, taken)
    else:
        batches = plan_batches(entries, options.max_batch, taken, options.per_stage)
    if options.timed_repeats:
        batches = with_times(batches, untimed, taken)
    argv = {b.name: batch_argv(b, out, options) for b in batches}
    return Plan(shapes, batches, argv, kept, previous, drill, options.repeat, options.shard_method)


def _names_in(out: Path) -> frozenset[str]:
    """Batch names whose report or log is already in `out`: a new batch never writes over
    one, also in a folder that holds no capture yet."""
    if not out.is_dir():
        return frozenset()
    names = set()
    for path in out.iterdir():
        if is_report_name(path):
            names.add(report_stem(path))
        elif path.name.endswith(".ncu.log"):
            names.add(path.name.removesuffix(".ncu.log"))
    return frozenset(names)


def shapes_sha256(path: Path) -> str:
    """sha256 of the shapes file, as the manifest records it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_resumable(
    previous: Manifest, shapes: ShapesFile, sha256: str, options: CaptureOptions, out: Path
) -> None:
    """UsageError unless --resume continues the same capture: the same shapes file, settings
    and shard (otherwise kept and new shapes would not be comparable, or be forgotten)."""
    wanted = {
        "shapes file (sha256)": (previous.shapes_sha256, sha256),
        "seed": (previous.seed, shapes.seed),
        "warmup": (previous.warmup, shapes.warmup),
        "cudnn_benchmark": (previous.cudnn_benchmark, shapes.cudnn_benchmark),
        "--shard": (previous.shard, f"{options.shard[0]}/{options.shard[1]}"),
        "--drill-down selection": (_drilled(previous.drill_down), _drilled(options.drill)),
        "--repeat": (previous.repeat, options.repeat),
        "--repeat-counters": (previous.repeat_counters, options.repeat_counters),
    }
    changed = [name for name, (old, new) in wanted.items() if old != new]
    if changed:
        raise UsageError(
            f"{out} holds a capture made with another {', '.join(changed)}: --resume must"
            " continue the same capture; capture into another folder"
        )


def _drilled(drill: DrillRequest | None) -> object:
    """What a drill-down request is, whatever its cards file is called (the name a capture
    records depends on nothing but the file; captures before 1.7 recorded the path as given)."""
    return None if drill is None else drill.model_dump(exclude={"cards_file"})


def check_fits(shapes_path: Path, entries: list[ShapeEntry], gpu_bytes: int) -> None:
    """ShapesError for the first shape whose tensors alone exceed the GPU's memory."""
    for entry in entries:
        need = entry.shape.device_bytes()
        if need > gpu_bytes:
            raise ShapesError(
                f"{shapes_path}: {entry.group}: its tensors need {_gb(need)} of GPU memory,"
                f" more than the {_gb(gpu_bytes)} the GPU has"
            )


def _gb(count: int) -> str:
    return f"{count / 1e9:,.1f} GB ({count:,} bytes)"
