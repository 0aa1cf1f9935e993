"""Capability cards: the JSON users keep, with the legacy field names plus what they lacked.

A card is one op shape (or one NVTX range / kernel name for a foreign report) with every kernel
it launched, each classified by the rules; the card's primary class is its longest kernel's.
These models are the one card model of the tool: classify builds them, the legacy adapter
converts old files into them, reclassify and summary read them; `verdicts.judge` is the one
place where a card's verdict is decided.

A card or kernel is written with the fields it holds (pydantic's `fields_set`): classify fills
every field but the few that only describe converted legacy data, a legacy card keeps exactly
its legacy fields plus what conversion and reclassify add.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.measured import without_unmeasured
from ..core.units import NonNegative
from .coverage import StageCoverage
from .drill import DrillDown, Settled
from .figures import CardRoofline, Margin, Roofline
from .hot_units import HotUnit
from .machine import CaptureInfo, GpuInfo
from .projected import KernelProjection, Projection
from .repeats import KernelRepeats, Measurement

SCHEMA_VERSION = "1.10"  # 1.2: tensor_pct over elapsed cycles; 1.3: captures, calls,
# source; 1.4: coverage of a recorded program, real_us and real_kernels per card; 1.5:
# drill_down per kernel, settled per card; 1.6: repeats per kernel, measurement per card;
# 1.7: rules_yaml, and paths named the same from any working folder; 1.8: real_kernel_names;
# 1.9: projection (ncu-classify project) per file and per kernel; 1.10: captured_light per
# card, light_shapes / light_real_us per coverage stage (capture --light-after)
SCOPE = (
    "Isolated replays under Nsight Compute kernel replay (each kernel serialised, caches flushed"
    " between passes, clocks left unlocked with --clock-control none); classifications are per"
    " kernel by the first matching rule, and a card's primary class is its longest kernel's;"
    " not attribution within the integrated pipeline; MFU not implied."
)
CardStatus = Literal["classified", "unresolved", "failed", "incomplete", "no_kernels"]
SourceFormat = Literal["ncu-classify", "legacy"]
UNRESOLVED = "unresolved_no_dominant_limiter"
# every card figure is NonNegative (core.units)
VERDICT_FIELDS = (
    "dominant_kernel",
    "primary",
    "primary_rule",
    "alternative_explanation",
    "counter_experiment",
)


LegacyFields = Annotated[
    dict[str, Any],
    Field(
        description="legacy fields kept as they were: fields this format lacks, and values it"
        " cannot hold (a note stored as a list, 250 % of a peak); see the file's input_warnings",
    ),
]


class KernelCard(BaseModel):
    """One kernel of a card: legacy fields first, then provenance."""

    model_config = ConfigDict(extra="forbid")
    kernel: str = Field(description="demangled kernel name, verbatim")
    metrics: dict[str, NonNegative | None] = Field(
        description="card metric key -> value in card units"
    )
    classification: str | None
    rule: str | None = Field(description="text of the rule that matched")
    evidence: dict[str, NonNegative | None]
    mangled_name: str | None = None
    demangled_name: str | None = None
    function_name: str | None = None
    nvtx_range: str | None = None
    report: str | None = None
    launch_index: list[int] | None = Field(default=None, description="[range, action] in report")
    replay_passes: int | None = None
    metric_sources: dict[str, str] = Field(default_factory=dict)
    missing_metrics: list[str] = Field(default_factory=list)
    unchecked_metrics: list[str] = Field(
        default_factory=list, description="metrics a rule needed but the report lacked"
    )
    metric_repairs: list[str] = Field(
        default_factory=list,
        description="corrections made to stored metrics (legacy ms-as-us durations), one note each",
    )
    hot_units: dict[str, Annotated[list[HotUnit], without_unmeasured("pct")]] = Field(
        default_factory=dict, description="busiest entries of the SM and memory breakdowns"
    )
    roofline: Roofline | None = None
    margin: Margin | None = Field(
        default=None, description="distance to the deciding threshold and to the nearest rival"
    )
    verdict_note: str | None = Field(
        default=None, description="what the class alone does not say (a non-math hot unit)"
    )
    drill_down: DrillDown | None = Field(
        default=None, description="warp-state counters and the class they settle on"
    )
    repeats: KernelRepeats | None = Field(
        default=None, description="its figures over the repeats of capture --repeat N"
    )
    projection: KernelProjection | None = Field(
        default=None,
        description="a projected file: how dur_us was projected (its roofline is found again"
        " on the target; the other metrics, hot units and margin stay the source GPU's)",
    )
    legacy_fields: LegacyFields = Field(default_factory=dict)


class Card(BaseModel):
    """One op shape (or range) with all its kernels and the verdict."""

    model_config = ConfigDict(extra="forbid")
    group: str
    resolution: str | None = None
    stage: str
    op: str
    shape_parameters: dict[str, Any] = Field(default_factory=dict)
    input_sha256: str | None = None
    ncu_output: str | None = None
    scheduler_note: str | None = None
    note: str | None = Field(default=None, description="provenance/assumptions of the shape")
    calls: int = Field(default=1, ge=1, description="runs per inference: summaries weight by it")
    source: str | None = Field(default=None, description="module paths a recording saw it in")
    input_source: Literal["seeded", "recorded"] | None = Field(
        default=None, description="replayed with seeded random inputs, or the recorded ones"
    )
    real_us: NonNegative | None = Field(
        default=None,
        description="kernel time per call in the recorded program (torch.profiler), us",
    )
    real_kernels: NonNegative | None = Field(
        default=None, description="kernels per call in the recorded program"
    )
    real_kernel_names: dict[str, NonNegative] | None = Field(
        default=None,
        description="the recorded program's kernels (torch.profiler's names) -> launches per call",
    )
    real_calls: int | None = Field(
        default=None, ge=1, description="calls the recording saw (calls may have been edited)"
    )
    nominal_mac_flops: int | None = None
    nominal_bytes: int | None = None
    summed_kernel_us: NonNegative | None
    achieved_tflops: float | None = Field(default=None, description="nominal FLOPs / summed time")
    kernels: list[KernelCard]
    dominant_kernel: str | None
    primary: str | None
    primary_rule: str | None
    alternative_explanation: str | None
    counter_experiment: str | None
    status: CardStatus = Field(
        description="failed: the shape did not capture (see error); incomplete: the kernel list"
        " is known to be truncated (see notes); both are kept by reclassify"
    )
    error: str | None = None
    notes: list[str] = Field(
        default_factory=list, description="what is known to be wrong or assumed about this card"
    )
    gpu: GpuInfo = Field(default_factory=GpuInfo)
    missing_metrics: list[str] = Field(default_factory=list)
    roofline: CardRoofline | None = Field(
        default=None, description="useful over executed FLOPs and MFU of the whole card"
    )
    settled: Settled | None = Field(
        default=None,
        description="the class a drill-down of the dominant kernel settled on (the first"
        " verdict stays in primary)",
    )
    measurement: Measurement | None = Field(
        default=None,
        description="capture --repeat N: time per repeat, clocks, and whether the verdict is"
        " stable over the measured spread",
    )
    captured_light: bool | None = Field(
        default=None,
        description="captured with the light metric list (capture --light-after): sm_pct, l2_pct,"
        " hot units and the roofline's FLOPs were not measured; written only where true",
    )
    legacy_fields: LegacyFields = Field(default_factory=dict)


class CardFile(BaseModel):
    """A whole cards file."""

    model_config = ConfigDict(extra="forbid")
    schema_version: str = SCHEMA_VERSION
    source_format: SourceFormat = Field(
        default="ncu-classify", description="who made the cards: this tool, or the legacy pipeline"
    )
    generated_at: str | None = Field(description="when the cards were made; null if not recorded")
    reclassified_at: str | None = Field(default=None, description="when rules were last reapplied")
    tool_version: str | None = Field(description="null: legacy cards not yet reclassified")
    rules: str
    rules_id: str | None = Field(description="null: legacy cards not yet reclassified")
    rules_file: str | None = Field(
        description="the rules file's name (`default`: the packaged rules); null: legacy cards"
        " not yet reclassified. Files before 1.7: its path as given"
    )
    rules_sha256: str | None
    rules_yaml: str | None = Field(
        default=None,
        description="the text of the rules file (its sha256 is rules_sha256): diff names the"
        " thresholds a flip crossed from it, wherever the file is",
    )
    inputs: list[str]
    captures: list[CaptureInfo] = Field(
        default_factory=list,
        description="each capture folder read: when, shapes file, GPUs, driver, ncu, CUDA,"
        " torch, cuDNN (from its manifest); empty for loose reports and legacy cards",
    )
    input_errors: list[str] = Field(default_factory=list)
    input_warnings: list[str] = Field(
        default_factory=list, description="inputs read once though given twice, clashing ids"
    )
    coverage: list[StageCoverage] = Field(
        default_factory=list,
        description="per stage of a recorded program: how much of its device time the cards"
        " cover, and what they do not (written for captures of recorded shapes files)",
    )
    cards: list[Card]
    summary: dict[str, int]
    by_stage: dict[str, dict[str, int]]
    scope: str | None = SCOPE
    projection: Projection | None = Field(
        default=None,
        description="set: the file is a projection onto another GPU (ncu-classify project), not"
        " a measurement",
    )
    legacy_fields: LegacyFields = Field(default_factory=dict)


# classify writes every field except those that only converted legacy cards use.
# A drill-down section and a settled verdict are written only where there is one.
CLASSIFY_KERNEL_FIELDS = frozenset(KernelCard.model_fields) - {
    "metric_repairs",
    "legacy_fields",
    "drill_down",
    "repeats",
    "projection",
}
CLASSIFY_FIELDS = frozenset(Card.model_fields) - {
    "notes",
    "legacy_fields",
    "settled",
    "measurement",
    "captured_light",
}
# written only for shapes whose recording timed them on a GPU
RECORDED_ONLY = ("real_us", "real_kernels", "real_kernel_names", "real_calls")
