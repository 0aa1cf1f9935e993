"""The capture manifest: what was replayed, on which machine and software, and how it went."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.main import IncEx

from ..core.atomic import write_text_atomic
from ..core.errors import ManifestError
from ..core.facts import Machine
from ..core.jsonpos import read_model
from ..core.textio import MIB
from ..core.units import NonNegative
from ..read.names import COMPRESSIONS, REPORT_SUFFIXES
from ..replay.protocol import InputDraws, ReplayPhases
from ..shapes.aten import aten_nominal_bytes
from ..shapes.file import ShapeEntry
from ..shapes.layouts import PLAIN_WHEN_ABSENT
from ..shapes.recorded import RecordedTotals

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
MAX_MANIFEST_BYTES = 256 * MIB


def _plain_name(name: str, suffixes: tuple[str, ...]) -> str:
    """A file name inside the capture folder: no folder part, not hidden, the right suffix."""
    if "/" in name or "\\" in name or name.startswith(".") or not name.endswith(suffixes):
        raise ValueError(f"{name!r} is not a file name in the capture folder ending {suffixes[0]}")
    return name


def _report_name(name: str | None) -> str | None:
    return name if not name else _plain_name(name, REPORT_SUFFIXES)


EndedBy = Literal["finished", "interrupted", "timeout", "refused"]  # how an ncu process ended
BatchKind = Literal["counters", "times", "light"]  # card metrics, durations (--repeat), or
# the light list (--light-after: core.metrics.LIGHT_METRICS)
Status = Literal["pending", "ok", "failed"]
ShardMethod = Literal["hash", "cost_v1"]  # how --shard chose the shapes (capture.shards)
ReportName = Annotated[str | None, AfterValidator(_report_name)]
LogName = Annotated[str, AfterValidator(lambda name: _plain_name(name, (".ncu.log",)))]


class HostInfo(Machine):
    """The machine a capture ran on: nvidia-smi's GPUs, ncu, Python (from capture), and the
    replay process's GPU and libraries (from its first status line). The manifest publishes
    the GPU's name as `gpu_name`."""

    WRITE_ORDER = (
        "gpus", "ncu", "ncu_path", "python", "compute_capability", "cuda_runtime",
        "cuda_visible_devices", "cudnn", "gpu_name", "l2_bytes", "memory_bytes", "sm_count",
        "torch", "clock_control", "pipeline_boost_state",
    )  # fmt: skip

    gpu: str | None = Field(default=None, alias="gpu_name")
    gpus: list[dict[str, str]] = Field(default_factory=list)  # nvidia-smi rows, as text
    ncu_path: str | None = None
    compute_capability: str | None = None
    cuda_visible_devices: str | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    clock_control: str | None = None  # ncu's --clock-control as capture passed it
    pipeline_boost_state: str | None = None  # ncu's --pipeline-boost-state default, if it has one


# What a group id tells of its shape (not how it was captured: calls, source, inputs).
ID_TELLS = (
    "group",
    "stage",
    "op",
    "shape_parameters",
    "nominal_mac_flops",
    "nominal_bytes",
)
# The fields a manifest shape hands on to its card, under the same names.
SHAPE_IDENTITY = (
    *ID_TELLS,
    "note",
    "calls",
    "source",
    "input_source",
    "input_sha256",
    "real_us",
    "real_kernels",
    "real_kernel_names",
    "real_calls",
)


class ManifestShape(BaseModel):
    """One shape of a capture and what became of it."""

    model_config = ConfigDict(extra="forbid")
    group: str
    stage: str
    op: str
    shape_parameters: dict[str, Any]
    nominal_mac_flops: int
    nominal_bytes: int
    note: str | None = None
    calls: int = Field(default=1, ge=1, description="runs per inference (recorded shapes)")
    source: str | None = Field(default=None, description="module paths a recording saw")
    input_source: Literal["seeded", "recorded"] = "seeded"
    real_us: NonNegative | None = Field(
        default=None, description="the recorded program's kernel time per call (us)"
    )
    real_kernels: NonNegative | None = Field(
        default=None, description="kernels per call in the recorded program"
    )
    real_kernel_names: dict[str, NonNegative] | None = Field(
        default=None, description="the recorded program's kernels -> launches per call"
    )
    real_calls: int | None = Field(
        default=None, ge=1, description="calls the recording saw (calls may have been edited)"
    )
    status: Status = "pending"
    error: str | None = None
    input_sha256: str | None = None
    backend_used: str | None = None
    replay_seconds: float | None = None
    replay_phases: ReplayPhases | None = Field(
        default=None, description="where the replay's seconds went (inputs, warm-up, measured)"
    )
    report: ReportName = None
    kernels: int | None = None
    replay_passes: list[int] = Field(default_factory=list)
    times_status: Status | None = Field(
        default=None, description="the duration-only repeats (--repeat N): None without them"
    )
    times_error: str | None = None
    times_report: ReportName = None
    repeats: int | None = Field(
        default=None, description="launches measured: the counters one plus the timed repeats"
    )
    light: bool = Field(
        default=False, description="captured with the light metric list (--light-after)"
    )

    def identity(self) -> dict[str, Any]:
        """What a card of this shape says about it, under the card's own field names (the one
        place they are copied; a test keeps them fields of the card): the shape, its nominal
        work, where it came from, and the backend the replay used among its parameters."""
        named = {name: getattr(self, name) for name in SHAPE_IDENTITY}
        if "overload" in self.shape_parameters:  # counted again: the rules for it improve
            named["nominal_bytes"] = aten_nominal_bytes(self.shape_parameters, self.nominal_bytes)
        if self.backend_used:
            named["shape_parameters"] = {**self.shape_parameters, "backend_used": self.backend_used}
        return named


def manifest_shape(entry: ShapeEntry) -> ManifestShape:
    """Manifest record of a shape before it is replayed."""
    params = entry.shape.model_dump(
        by_alias=True,
        exclude={
            "op", "name", "note", "calls", "source", "inputs_file", "real_us", "real_kernels",
            "real_kernel_names", "real_calls",
        },
    )  # fmt: skip
    for field in PLAIN_WHEN_ABSENT:  # a plain typed shape's parameters as they always read
        if field in params and params[field] is None:
            del params[field]
    if hasattr(entry.shape, "output"):
        params["output"] = entry.shape.output()
    return ManifestShape(
        group=entry.group,
        stage=entry.stage,
        op=entry.shape.aten_op(),
        shape_parameters=params,
        nominal_mac_flops=entry.shape.nominal_flops(),
        nominal_bytes=entry.shape.nominal_bytes(),
        note=entry.shape.note,
        calls=entry.shape.calls,
        source=entry.shape.source,
        input_source="recorded" if entry.shape.inputs_file else "seeded",
        real_us=entry.shape.real_us,
        real_kernels=entry.shape.real_kernels,
        real_kernel_names=entry.shape.real_kernel_names,
        real_calls=entry.shape.real_calls,
    )


class BelowTarget(BaseModel):
    """A shape `capture --coverage` left out: below the target, not captured (not failed, not
    pending); coverage counts its recorded time as not covered, saying why."""

    model_config = ConfigDict(extra="forbid")
    group: str
    stage: str
    calls: int = Field(ge=1)
    real_calls: int | None = Field(default=None, ge=1)
    real_us: NonNegative | None = Field(default=None, description="program time per call (us)")


def below_target(entry: ShapeEntry) -> BelowTarget:
    """The manifest's line for a shape below the coverage target."""
    shape = entry.shape
    return BelowTarget(
        group=entry.group, stage=entry.stage, calls=shape.calls, real_calls=shape.real_calls,
        real_us=shape.real_us,
    )  # fmt: skip


class DrillRequest(BaseModel):
    """What a drill-down capture was asked to settle: the cards file and the shapes chosen."""

    model_config = ConfigDict(extra="forbid")
    cards_file: str = Field(description="the cards file whose verdicts are drilled down")
    cards_sha256: str
    selected: dict[str, str] = Field(
        description="group id -> why it is drilled (unresolved, borderline, unchecked, class X)"
    )
    not_in_shapes: list[str] = Field(
        default_factory=list, description="chosen groups the shapes file does not hold"
    )


class ManifestBatch(BaseModel):
    """One ncu process: its command line and outcome."""

    model_config = ConfigDict(extra="forbid")
    name: str
    report: Annotated[str, AfterValidator(lambda name: _report_name(name) or "")]
    argv: list[str]
    exit_code: int | None = None
    wall_seconds: float | None = None
    log: LogName
    groups: list[str]
    gpu: int | None = None
    ended_by: EndedBy | None = None
    kind: BatchKind = "counters"
    dropped_source_bytes: int | None = Field(
        default=None, description="bytes of SASS and source removed by --drop-sources"
    )
    sources_kept: str | None = Field(
        default=None, description="why --drop-sources left the report as ncu wrote it"
    )


class Manifest(BaseModel):
    """Everything needed to read a capture folder without the machine that made it."""

    model_config = ConfigDict(extra="forbid")
    manifest_version: int = MANIFEST_VERSION
    tool_version: str
    created_at: str
    shapes_file: str
    shapes_sha256: str
    seed: int
    warmup: int
    cudnn_benchmark: bool
    input_draws: InputDraws = Field(
        default="torch_cpu_randn",
        description="the generator of seeded inputs (replay.inputs); older captures: torch's CPU",
    )
    shard: str = "1/1"
    shard_method: ShardMethod = Field(
        default="hash", description="how --shard chose the shapes (captures before cost_v1: hash)"
    )
    host: HostInfo = Field(default_factory=HostInfo)
    metrics: list[str]
    batches: list[ManifestBatch] = Field(default_factory=list)
    shapes: list[ManifestShape]
    recorded_totals: RecordedTotals | None = Field(
        default=None, description="the recorded program's device time per stage (coverage)"
    )
    drill_down: DrillRequest | None = Field(
        default=None, description="a drill-down of another capture's cards: what it settles"
    )
    repeat: int = Field(
        default=1, ge=1, le=100, strict=True, description="launches measured per shape (--repeat)"
    )
    repeat_counters: bool = Field(
        default=False,
        strict=True,
        description="every launch with the card metrics, not durations alone",
    )
    coverage_target_pct: float | None = Field(
        default=None, gt=0, le=100, description="capture --coverage: the share of each stage's"
        " recorded kernel time its largest shapes were captured to cover",
    )  # fmt: skip
    below_target: list[BelowTarget] = Field(
        default_factory=list, description="the shapes left out below that target"
    )
    light_after_pct: float | None = Field(
        default=None, gt=0, lt=100, description="capture --light-after: shapes past this share"
        " of each stage's time, up to the coverage target, taken with the light metric list",
    )  # fmt: skip


def write_manifest(folder: Path, manifest: Manifest) -> Path:
    """Write `manifest.json` atomically into `folder`."""
    path = folder / MANIFEST_NAME
    # fields of --drop-sources only where it was asked for: older releases can still read it
    unasked = {
        index: {"dropped_source_bytes", "sources_kept"}
        for index, batch in enumerate(manifest.batches)
        if batch.dropped_source_bytes is None and batch.sources_kept is None
    }
    # and the program's kernel names only where a recording named them, `light` where true
    unnamed = {
        index: unsaid for index, shape in enumerate(manifest.shapes) if (unsaid := _unsaid(shape))
    }
    exclude: dict[str, IncEx | bool] = {
        key: value for key, value in (("batches", unasked), ("shapes", unnamed)) if value
    }
    if manifest.coverage_target_pct is None and not manifest.below_target:
        exclude |= {"coverage_target_pct": True, "below_target": True}  # older releases read it
    if manifest.light_after_pct is None:
        exclude["light_after_pct"] = True
    text = manifest.model_dump_json(indent=2, exclude=exclude or None)
    write_text_atomic(path, text + "\n")
    return path


def _unsaid(shape: ManifestShape) -> set[str]:
    """A shape's fields left unwritten: the kernel names a recording did not give, `light` for
    a shape captured with the full list (older releases read the manifest)."""
    unsaid = {"real_kernel_names"} if shape.real_kernel_names is None else set()
    return unsaid if shape.light else unsaid | {"light"}


def read_manifest(path: Path) -> Manifest:
    """Read and validate a manifest; a bad one is an input error naming the file and field."""
    return read_model(path, Manifest, ManifestError, MAX_MANIFEST_BYTES, "manifest field ")


def report_kept(out: Path, name: str | None) -> bool:
    """Whether the report a manifest names is in `out`, as ncu wrote it or compressed since
    (`all.ncu-rep.xz` for `all.ncu-rep`, which classify reads in its place): --resume keeps
    its shapes instead of capturing them again."""
    return bool(name) and any((out / f"{name}{c}").exists() for c in COMPRESSIONS)
