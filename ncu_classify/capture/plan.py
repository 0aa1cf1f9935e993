"""Capture planning: which shapes run, in which ncu process, with which command line.

One plan per capture, from one reading of the shapes file and of the folder: `--dry-run` prints
the very plan a capture runs, and tests need no GPU. A shape whose tensors cannot fit the GPU is
refused here, with the bytes it needs, before any process starts.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from ..core.errors import ShapesError, UsageError
from ..core.metrics import LIGHT_METRICS
from ..replay.protocol import InputDraws
from ..shapes.file import ShapeEntry, ShapesFile, read_shapes
from .batch import Batch, gpu_batches, plan_batches
from .drill import capture_metrics, drill_entries, resolve_drill
from .folder import FolderMark, folder_mark
from .light import light_batches, light_set
from .manifest import (
    MANIFEST_NAME,
    DrillRequest,
    Manifest,
    ManifestShape,
    ShardMethod,
    read_manifest,
    report_kept,
)
from .ncu_cmd import ncu_argv
from .order import is_timed, largest_first, largest_share_first, time_bands, wanted_groups
from .repeats import DURATION_METRIC, timed, with_times
from .shards import select_shard

CaptureOrder = Literal["time", "file"]
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
    # A folder where the counters batch writes a sample of each shape's output (`try`'s numerics)
    keep_outputs: Path | None = None
    durations_only: bool = False  # every batch asks ncu for the duration alone (`try --program`)
    order: CaptureOrder = "time"  # largest program time first (a timed recording), or file order
    coverage_pct: float | None = None  # --coverage: each stage's largest shapes up to this share
    light_after_pct: float | None = None  # --light-after: past this share, the light list

    @property
    def timed_repeats(self) -> bool:
        """Whether a duration-only batch follows each counters batch."""
        return self.repeat > 1 and not self.repeat_counters


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
    """What a capture will run, made once from one reading of the shapes file and the folder:
    the shapes of this shard, the batches and their command lines, the shapes kept (--resume),
    and the options as they apply (the drill-down checked against the shapes, the capture's own
    shard method). The dry run prints it; the capture runs it on the host (`on_host`)."""

    shapes_path: Path
    shapes: ShapesFile
    shapes_sha256: str  # of the bytes read, as the manifest records it
    out: Path
    options: CaptureOptions
    entries: list[ShapeEntry]  # this shard's shapes (the drill-down's alone), in capture order
    batches: list[Batch]
    argv: dict[str, list[str]]
    kept: list[ManifestShape]
    previous: Manifest | None
    seen: FolderMark  # what the folder held when planned
    below: list[ShapeEntry] = field(default_factory=list)  # --coverage: left out, below it

    @property
    def drill(self) -> DrillRequest | None:
        """The drill-down request, checked against the shapes."""
        return self.options.drill

    @property
    def repeat(self) -> int:
        """Launches measured per shape (--repeat)."""
        return self.options.repeat

    @property
    def shard_method(self) -> ShardMethod:
        """How --shard picks this capture's shapes (a resumed capture keeps its own)."""
        return self.options.shard_method

    @property
    def by_time(self) -> bool:
        """Whether the batches are in capture-by-time order (largest program time first),
        the order each GPU's queue must keep."""
        return self.options.order == "time" and is_timed(self.shapes)

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
        metrics=(
            [DURATION_METRIC]
            if batch.kind == "times" or options.durations_only
            else list(LIGHT_METRICS)
            if batch.kind == "light"
            else capture_metrics(options.drill)
        ),
        groups=[e.group for e in batch.entries],
        target=target,
    )


def plan_capture(
    shapes_path: Path, out: Path, options: CaptureOptions, gpu_bytes: int | None = None
) -> Plan:
    """The one plan of a capture, before the host is probed: the shapes file read once, the
    shapes of this shard, minus (on --resume) those already captured, as batches. Refused
    here: a bad shapes file or shard, a shape whose tensors exceed `gpu_bytes` (the smallest
    GPU used; unknown: the largest GPU made), a folder that holds a capture without --resume."""
    shapes, sha256 = read_shapes(shapes_path)
    drill = resolve_drill(options.drill, {e.group for e in shapes.entries()})
    previous = _previous(out, options)
    method = previous.shard_method if previous else options.shard_method
    options = replace(options, drill=drill, shard_method=method)
    entries = drill_entries(select_shard(shapes.entries(), *options.shard, method), drill)
    entries = recorded_inputs(shapes_path, entries)
    if previous is not None:
        check_resumable(previous, shapes, sha256, options, out)
        if options.coverage_pct is None:  # --resume keeps the capture's target unless given
            options = replace(options, coverage_pct=previous.coverage_target_pct)
        if options.light_after_pct is None:  # and its light tier (0: none)
            own, target = previous.light_after_pct, options.coverage_pct
            if own and target is not None and not own < target:
                raise UsageError(
                    f"{out}: the capture's own --light-after {own:g} (kept by --resume) is not"
                    f" below --coverage {target:g}: give --light-after below it, or 0 for no"
                    " light tier"
                )
            options = replace(options, light_after_pct=own)
    options = replace(options, light_after_pct=options.light_after_pct or None)
    if options.coverage_pct is not None:  # before the light tier's cut, which needs it too
        check_coverage(shapes_path, shapes, options.coverage_pct)
    light = light_set(shapes, options.coverage_pct, options.light_after_pct)
    done = {  # a light shape no longer in the light band is captured again, in full
        r.group: r
        for r in (previous.shapes if previous else [])
        if r.status == "ok" and report_kept(out, r.report) and (not r.light or r.group in light)
    }
    entries, below = _by_time(shapes_path, shapes, entries, options, set(done))
    check_fits(shapes_path, entries, gpu_bytes or LARGEST_GPU_BYTES)
    seen = folder_mark(out)
    todo, kept, untimed, taken = entries, [], [], seen[0]  # never write over a report or log
    if previous is not None:
        kept = [done[e.group] for e in entries if e.group in done]
        untimed = [e for e in entries if e.group in done and not timed(done[e.group], out)]
        todo = [e for e in entries if e.group not in done]
        taken |= frozenset(b.name for b in previous.batches)
    # cut at the time bands only where each stage is a process of its own: --one-process
    # asked for one process, and its shapes are already largest first across the stages; a
    # drill-down captures a few chosen shapes again, one process per stage as before
    by_time = options.order == "time" and options.per_stage and is_timed(shapes)
    bands = time_bands(entries) if by_time and options.drill is None else None
    full = [e for e in todo if e.group not in light]
    batches = _batches(full, untimed, taken, options, bands, [e for e in todo if e.group in light])
    argv = {b.name: batch_argv(b, out, options) for b in batches}
    return Plan(
        shapes_path, shapes, sha256, out, options, entries, batches, argv, kept, previous, seen,
        below,
    )  # fmt: skip


def check_coverage(shapes_path: Path, shapes: ShapesFile, coverage_pct: float) -> None:
    """UsageError for a --coverage out of range, or for a shapes file without recorded times
    (naming the file)."""
    if not 0 < coverage_pct <= 100:  # (the CLI checks it too; the library here)
        raise UsageError(f"--coverage {coverage_pct}: more than 0 and at most 100")
    if not is_timed(shapes):
        raise UsageError(
            f"{shapes_path}: --coverage needs the recorded program's kernel time, and this"
            " shapes file has none (record it on a GPU with ncu-classify record)"
        )


def _by_time(
    shapes_path: Path,
    shapes: ShapesFile,
    entries: list[ShapeEntry],
    options: CaptureOptions,
    done: set[str],
) -> tuple[list[ShapeEntry], list[ShapeEntry]]:
    """This shard's shapes to capture, in capture order (largest program time first when the
    file is a timed recording and `--order time`), and those `--coverage` leaves out below its
    target (a shape captured before stays, whatever the target now)."""
    below: list[ShapeEntry] = []
    if options.coverage_pct is not None:
        check_coverage(shapes_path, shapes, options.coverage_pct)
        wanted = wanted_groups(shapes, options.coverage_pct) | done
        below = [e for e in entries if e.group not in wanted]
        entries = [e for e in entries if e.group in wanted]
    if options.order == "time" and is_timed(shapes):  # one process for all stages: by share
        by_share = not options.per_stage and options.drill is None
        entries = largest_share_first(shapes, entries) if by_share else largest_first(entries)
    return entries, below


def on_host(plan: Plan, ncu_path: str, gpu_bytes: int | None) -> Plan:
    """The plan as it runs on the probed host, under the folder's lock: every shape fits the
    smallest GPU used, the command lines name the ncu found, and the folder still holds what
    the plan saw (no capture finished into it since)."""
    if gpu_bytes:
        check_fits(plan.shapes_path, plan.entries, gpu_bytes)
    if folder_mark(plan.out) != plan.seen:
        raise UsageError(
            f"{plan.out}: another capture wrote into this folder while this one was planned;"
            " start it again (with --resume to finish it)"
        )
    options = replace(plan.options, ncu=ncu_path)
    argv = {b.name: batch_argv(b, plan.out, options) for b in plan.batches}
    return replace(plan, options=options, argv=argv)


def _previous(out: Path, options: CaptureOptions) -> Manifest | None:
    """The capture --resume continues (its manifest), if any; a folder that already holds a
    capture is finished with --resume only."""
    path = out / MANIFEST_NAME
    if not path.exists():
        return None
    if not options.resume:
        raise UsageError(
            f"{out} already holds a capture: pass --resume to finish it,"
            " or choose another output folder"
        )
    return read_manifest(path)


def _batches(
    entries: list[ShapeEntry],
    untimed: list[ShapeEntry],
    taken: frozenset[str],
    options: CaptureOptions,
    bands: dict[str, int] | None = None,
    light: list[ShapeEntry] | None = None,
) -> list[Batch]:
    """The batches of the shapes to capture (one per stage, cut at the time `bands` when
    capturing by time, or one per GPU), then those of the `light` shapes (--light-after), each
    followed by its duration-only batch under --repeat; `untimed` (--resume) are timed in one
    more."""
    if not options.per_stage and len(options.gpus) > 1:
        batches = gpu_batches(entries, options.gpus, options.max_batch, taken)
    else:
        batches = plan_batches(entries, options.max_batch, taken, options.per_stage, bands)
    taken |= frozenset(b.name for b in batches)
    batches += light_batches(light or [], taken, options.max_batch, options.per_stage, options.gpus)
    return with_times(batches, untimed, taken) if options.timed_repeats else batches


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
