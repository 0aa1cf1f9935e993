"""The comparison of two cards files, as data: what `diff` writes as JSON (schema published with
`ncu-classify schema --diff`) and what its table, Markdown and CSV forms show."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..cards.headroom import StageTotals
from ..cards.machine import GpuInfo, Software
from ..core.metrics import EVIDENCE_KEYS

DIFF_VERSION = "1.5"  # 1.1: roll-up as summary computes it (x calls, untimed apart); 1.2:
# judged_by and duration intervals per shape, speed `inconclusive` (cards measured with --repeat);
# 1.3: headroom totals that add up (at_sol_us, cards_without_roof, ...), beat_baseline_sol; a
# roll-up class without cards on a side that has the stage is 0 us there; 1.4: the change
# `below_target` (a shape the other side's capture left below its coverage target); 1.5: the
# change `captured_light` (a verdict that differs because one side was captured light)
Change = Literal[
    "same",
    "flipped",
    "within_noise",
    "missing_metric",
    "unclassified",
    "added",
    "removed",
    "below_target",
    "captured_light",
    "repeat",
]
Speed = Literal["faster", "slower", "within_noise", "inconclusive"]
SHOWN_METRICS = EVIDENCE_KEYS  # the figures a verdict rests on


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SideHeader(Model):
    """One cards file: where it came from, which GPU and software, which rules."""

    path: str
    source_format: str
    generated_at: str | None
    tool_version: str | None
    rules_id: str | None
    rules_sha256: str | None
    cards: int
    gpu: GpuInfo = Field(description="name, SMs, L2, SM clock range seen; {} if unknown")
    peaks: dict[str, float] = Field(
        description="median ceilings of its kernels: TFLOP/s per FLOP family, TB/s per level"
    )
    software: Software = Field(
        default_factory=Software,
        description="driver, ncu, CUDA, torch, cuDNN of its first capture; {} if none was read",
    )
    projection: str | None = Field(
        default=None, exclude=True, description="a projected file: its projection line"
    )


class SideFigures(Model):
    """One side of a shape: verdict, time, the dominant kernel's figures and roofline."""

    group: str
    primary: str | None
    status: str
    dominant_kernel: str | None
    summed_kernel_us: float | None
    dominant_us: float | None
    deciding_metric: str | None = Field(description="whose threshold decided the verdict")
    deciding_distance: float | None
    borderline: bool
    metrics: dict[str, float | None] = Field(description="the dominant kernel's, None = missing")
    pct_of_roof: float | None
    achieved_tflops: float | None
    intensity_dram: float | None = Field(description="FLOP per DRAM byte")
    binding: str | None
    hot_unit: str | None = Field(description="busiest SM sub-unit and its % of peak")
    mfu_pct: float | None
    settled: str | None = Field(
        default=None, description="the class a drill-down settled an open verdict on"
    )


class Crossing(Model):
    """A comparison of the first rule whose truth differs between the sides."""

    rule: str
    metric: str
    op: str
    threshold: float
    baseline: float | None
    candidate: float | None
    within_noise: bool | None = Field(description="|change| within the noise tolerance")


class ShapeDiff(Model):
    """One shape on both sides (or one side only) and what changed."""

    stage: str
    op: str
    change: Change
    matched_by: Literal["group", "shape", "nvtx_range", "kernel", "position"] | None
    kernel_changed: bool | None = Field(description="another dominant kernel: another algorithm")
    duration_ratio: float | None = Field(description="candidate / baseline summed kernel time")
    speed: Speed | None
    judged_by: Literal["intervals", "noise_file"] | None = Field(
        default=None,
        description="intervals: both sides were measured with --repeat (their run-to-run"
        " intervals decide); noise_file: the noise file's tolerances decide",
    )
    duration_intervals_us: list[list[float]] | None = Field(
        default=None,
        description="judged by intervals: the summed kernel time's run-to-run 95 % interval,"
        " baseline then candidate",
    )
    crossings: list[Crossing] = Field(default_factory=list)
    why: str | None = Field(description="one sentence on the change of verdict")
    baseline: SideFigures | None
    candidate: SideFigures | None
    metric_deltas: dict[str, float | None] = Field(
        default_factory=dict, description="candidate - baseline, dominant kernels; None: missing"
    )


class StageRollup(Model):
    """One class of one stage on both sides."""

    stage: str
    primary: str
    baseline_cards: int
    candidate_cards: int
    baseline_us: float | None = Field(
        description="kernel time per inference (summed kernel time x calls) of the cell's timed"
        " cards, as `summary` gives it; 0 when the side has cards in the stage but none of the"
        " class; None: the side has no card in the stage, or every card of the cell is untimed"
        " (`*_untimed` = its cards: time unknown)"
    )
    candidate_us: float | None
    baseline_untimed: int = Field(default=0, description="cards of the cell without a total")
    candidate_untimed: int = 0
    delta_us: float | None = Field(description="None: a side lacks the cell or has untimed cards")


class NoiseSeen(Model):
    """|candidate - baseline| of one metric over the matched shapes (duration: % change)."""

    metric: str
    shapes: int
    median: float
    p90: float
    max: float


class HeadroomChange(Model):
    """One stage's headroom per inference on both sides, and how much of it the change took."""

    stage: str
    baseline: StageTotals | None
    candidate: StageTotals | None
    saved_us: float | None = Field(
        description="baseline - candidate time per inference over the shapes timed on both"
    )
    saved_of_sol_pct: float | None = Field(
        description="saved_us over what the baseline could recover at the speed of light, %;"
        " None past 100 % (beat_baseline_sol)"
    )
    beat_baseline_sol: bool = Field(
        default=False,
        description="the candidate saved more than the baseline could at its speed of light: it"
        " beat the baseline's SOL (another math mode or dtype, such as TF32 for fp32)",
    )


class DiffFile(Model):
    """A whole comparison."""

    diff_version: str = DIFF_VERSION
    generated_at: str
    tool_version: str
    baseline: SideHeader
    candidate: SideHeader
    rules: str | None = Field(description="rules id both sides are compared under, if one")
    noise: str = Field(description="id of the noise tolerances used")
    stages: list[str] = Field(description="stages compared (all if empty)")
    warnings: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(description="shapes per change")
    shapes: list[ShapeDiff]
    rollup: list[StageRollup]
    noise_seen: list[NoiseSeen]
    headroom: list[HeadroomChange] = Field(
        default_factory=list, description="per stage: recoverable time before and after"
    )
