"""Capability cards: the JSON users keep, with the legacy field names plus what they lacked.

A card is one op shape (or one NVTX range / kernel name for a foreign report) with every kernel
it launched, each classified by the rules; the card's primary class is its longest kernel's.
These models are the one card model of the tool: classify builds them, the legacy adapter
converts old files into them, reclassify and summary read them, and `judge` is the one place
where a card's verdict is decided.

A card or kernel is written with the fields it holds (pydantic's `fields_set`): classify fills
every field but the few that only describe converted legacy data, a legacy card keeps exactly
its legacy fields plus what conversion and reclassify add.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.metrics import CATALOG, EVIDENCE_KEYS, derive
from ..read.records import KernelRecord, gpu_of
from ..verdicts.hot_units import HotUnit, compute_note, name_units
from ..verdicts.margins import Margin, verdict_margin
from ..verdicts.roofline import (
    CardRoofline,
    Roofline,
    card_roofline,
    compute_dtype,
    kernel_roofline,
)
from ..verdicts.rules import LoadedRules, evaluate

SCHEMA_VERSION = "1.3"  # 1.2: tensor_pct over elapsed cycles; 1.3: captures, calls, source
SCOPE = (
    "Isolated replays under Nsight Compute kernel replay (each kernel serialised, caches flushed"
    " between passes, clocks left unlocked with --clock-control none); classifications are per"
    " kernel by the first matching rule, and a card's primary class is its longest kernel's;"
    " not attribution within the integrated pipeline; MFU not implied."
)
CardStatus = Literal["classified", "unresolved", "failed", "incomplete", "no_kernels"]
SourceFormat = Literal["ncu-classify", "legacy"]
UNRESOLVED = "unresolved_no_dominant_limiter"
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]  # every card figure is
VERDICT_FIELDS = (
    "dominant_kernel",
    "primary",
    "primary_rule",
    "alternative_explanation",
    "counter_experiment",
)


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
    hot_units: dict[str, list[HotUnit]] = Field(
        default_factory=dict, description="busiest entries of the SM and memory breakdowns"
    )
    roofline: Roofline | None = None
    margin: Margin | None = Field(
        default=None, description="distance to the deciding threshold and to the nearest rival"
    )
    verdict_note: str | None = Field(
        default=None, description="what the class alone does not say (a non-math hot unit)"
    )
    legacy_fields: dict[str, Any] = Field(
        default_factory=dict,
        description="legacy fields kept as they were: fields this format lacks, and values it"
        " cannot hold (a note stored as a list, 250 % of a peak); see the file's input_warnings",
    )


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
    gpu: dict[str, Any] = Field(default_factory=dict)
    missing_metrics: list[str] = Field(default_factory=list)
    roofline: CardRoofline | None = Field(
        default=None, description="useful over executed FLOPs and MFU of the whole card"
    )
    legacy_fields: dict[str, Any] = Field(
        default_factory=dict,
        description="legacy fields kept as they were: fields this format lacks, and values it"
        " cannot hold (a note stored as a list, 250 % of a peak); see the file's input_warnings",
    )


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
    rules_file: str | None
    rules_sha256: str | None
    inputs: list[str]
    captures: list[dict[str, Any]] = Field(
        default_factory=list,
        description="each capture folder read: when, shapes file, GPUs, driver, ncu, CUDA,"
        " torch, cuDNN (from its manifest); empty for loose reports and legacy cards",
    )
    input_errors: list[str] = Field(default_factory=list)
    input_warnings: list[str] = Field(
        default_factory=list, description="inputs read once though given twice, clashing ids"
    )
    cards: list[Card]
    summary: dict[str, int]
    by_stage: dict[str, dict[str, int]]
    scope: str | None = SCOPE
    legacy_fields: dict[str, Any] = Field(
        default_factory=dict,
        description="legacy fields kept as they were: fields this format lacks, and values it"
        " cannot hold (a note stored as a list, 250 % of a peak); see the file's input_warnings",
    )


# classify writes every field except those that only converted legacy cards use.
CLASSIFY_KERNEL_FIELDS = frozenset(KernelCard.model_fields) - {"metric_repairs", "legacy_fields"}
CLASSIFY_FIELDS = frozenset(Card.model_fields) - {"notes", "legacy_fields"}


def kernel_values(
    metrics: Mapping[str, float | None], evidence: Mapping[str, float | None]
) -> dict[str, float | None]:
    """Rule inputs of a kernel: its metrics and derived ratios, else its evidence block (legacy
    kernels whose metrics were lost keep only their evidence)."""
    values: dict[str, float | None] = {spec.key: metrics.get(spec.key) for spec in CATALOG}
    values.update(derive(values))
    for key in EVIDENCE_KEYS:
        if values[key] is None:
            values[key] = evidence.get(key)
    return values


def kernel_verdict(
    metrics: Mapping[str, float | None], evidence: Mapping[str, float | None], rules: LoadedRules
) -> dict[str, Any]:
    """A kernel's class, rule text, evidence and unchecked metrics under `rules`; a kernel with
    no evidence at all gets no class rather than the fallback."""
    values = kernel_values(metrics, evidence)
    fresh = {k: values[k] for k in EVIDENCE_KEYS}
    if all(v is None for v in fresh.values()):
        return dict(
            classification=None, rule=None, evidence=fresh, unchecked_metrics=[*fresh], margin=None
        )
    verdict = evaluate(rules.rules, values)
    return dict(
        classification=verdict.rule.name,
        rule=verdict.rule.text,
        evidence=fresh,
        unchecked_metrics=verdict.unchecked,
        margin=verdict_margin(rules.rules, verdict.rule.name, values),
    )


def classify_kernel(
    kernel: KernelCard, rules: LoadedRules, device: Mapping[str, Any] | None = None
) -> KernelCard:
    """The kernel classified again under `rules` (every other field kept); `device` is its
    card's `gpu` (maximum clocks)."""
    verdict = kernel_verdict(kernel.metrics, kernel.evidence, rules)
    notes = _annotations(kernel.metrics, kernel.hot_units, verdict, device)
    return kernel.model_copy(update={**verdict, **notes})


def _annotations(
    metrics: Mapping[str, float | None],
    hot: dict[str, list[HotUnit]],
    verdict: dict[str, Any],
    device: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Roofline figures and the note on the verdict, from the kernel's own figures and the
    device's maximum clocks."""
    roofline = kernel_roofline(metrics, device)
    return {
        "roofline": roofline,
        "verdict_note": compute_note(verdict["classification"], hot, roofline),
    }


def kernel_card(record: KernelRecord, rules: LoadedRules) -> KernelCard:
    """Classify one kernel row."""
    metrics = {spec.key: record.values.get(spec.key) for spec in CATALOG}
    verdict = kernel_verdict(metrics, {}, rules)
    hot = name_units(record.hot_units)
    return KernelCard.model_construct(  # trusted values; the file is validated in tests
        set(CLASSIFY_KERNEL_FIELDS),
        kernel=record.demangled,
        metrics=metrics,
        **verdict,
        hot_units=hot,
        **_annotations(metrics, hot, verdict, record.device),
        mangled_name=record.mangled,
        demangled_name=record.demangled,
        function_name=record.function,
        nvtx_range="/".join(record.nvtx_ranges) or None,
        report=record.report,
        launch_index=[record.range_index, record.action_index],
        replay_passes=record.replay_passes,
        metric_sources=dict(record.sources),
        missing_metrics=list(record.missing),
        metric_repairs=[],  # given: a default factory costs more than classifying the kernel
    )


def dominant(kernels: list[KernelCard]) -> KernelCard | None:
    """The longest kernel (first of equals); a lone kernel dominates even without a duration;
    None if several kernels and none has a duration."""
    timed = [k for k in kernels if k.metrics.get("dur_us") is not None]
    if not timed:
        return kernels[0] if len(kernels) == 1 else None
    return max(timed, key=lambda k: k.metrics["dur_us"] or 0.0)


def judge(card: Card, rules: LoadedRules, *, kernels_classified: bool = False) -> Card:
    """The card with every kernel classified under `rules` (skipped when the caller just did)
    and the card's verdict: dominant kernel, primary, its rule texts and status."""
    kernels = card.kernels
    if not kernels_classified:
        kernels = [classify_kernel(k, rules, card.gpu) for k in kernels]
    return card.model_copy(update={"kernels": kernels, **_verdict(card, kernels, rules)})


def _verdict(card: Card, kernels: list[KernelCard], rules: LoadedRules) -> dict[str, Any]:
    """Card-level verdict fields. A card with an error stays failed and a truncated one stays
    incomplete (facts about the data, not the rules); neither gets a primary class."""
    top = dominant(kernels)
    blank: dict[str, Any] = dict.fromkeys(VERDICT_FIELDS[1:])
    if card.error:
        return {**blank, "dominant_kernel": top.kernel if top else None, "status": "failed"}
    if card.status == "incomplete":
        return {**blank, "status": "incomplete"}  # its named dominant kernel is not listed
    if not kernels:
        return {**blank, "dominant_kernel": None, "status": "no_kernels"}
    rule = next((r for r in rules.rules.rules if top and r.name == top.classification), None)
    if top is None or rule is None:
        return {**blank, "dominant_kernel": top.kernel if top else None, "status": "unresolved"}
    return {
        "dominant_kernel": top.kernel,
        "primary": rule.name,
        "primary_rule": rule.text,
        "alternative_explanation": rule.alternative_explanation,
        "counter_experiment": rule.counter_experiment,
        "status": "unresolved" if rule.name == UNRESOLVED else "classified",
    }


def build_card(
    *,
    group: str,
    stage: str,
    op: str,
    kernels: list[KernelCard],
    rules: LoadedRules,
    records: list[KernelRecord],
    **fields: Any,
) -> Card:
    """A card from its kernels, classified by `kernel_card`; the verdict is `judge`'s."""
    durations = [k.metrics.get("dur_us") for k in kernels]
    # A sum over the kernels that have a duration would understate the card: none then.
    timed = [d for d in durations if d is not None]
    summed = round(sum(timed), 6) if kernels and len(timed) == len(kernels) else None
    flops = fields.get("nominal_mac_flops")
    missing = sorted({m for k in kernels for m in k.missing_metrics})
    if any(d is None for d in durations):
        missing = sorted({*missing, "dur_us"})
    gpu = gpu_of(records)
    card = Card.model_construct(  # trusted values; the file is validated in tests
        set(CLASSIFY_FIELDS),
        group=group,
        stage=stage,
        op=op,
        kernels=kernels,
        summed_kernel_us=summed,
        achieved_tflops=round(flops / (summed * 1e6), 3) if flops and summed else None,
        **dict.fromkeys(VERDICT_FIELDS),
        status="unresolved",  # the verdict fields are decided by judge
        notes=[],
        gpu=gpu,
        missing_metrics=missing,
        roofline=card_roofline(
            [(k.metrics, k.roofline) for k in kernels],
            flops,
            summed,
            compute_dtype(fields.get("shape_parameters") or {}),
            gpu,
        ),
        **{"shape_parameters": {}, **fields},  # given: default factories are slow to construct
    )
    return judge(card, rules, kernels_classified=True)


def count_classes(
    pairs: Iterable[tuple[str, str]],
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Cards per class from (stage, class) pairs, overall and per stage, keys sorted."""
    overall: Counter[str] = Counter()
    stages: dict[str, Counter[str]] = {}
    for stage, key in pairs:
        overall[key] += 1
        stages.setdefault(stage, Counter())[key] += 1
    return dict(sorted(overall.items())), {s: dict(sorted(c.items())) for s, c in stages.items()}


def card_class(card: Card) -> tuple[str, str]:
    """(stage, primary class) of a card; a card without a verdict counts under its status."""
    return card.stage, card.primary or card.status
