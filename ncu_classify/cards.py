"""Capability cards: the JSON users keep, with the legacy field names plus what they lacked.

A card is one op shape (or one NVTX range / kernel name for a foreign report) with every kernel
it launched, each classified by the rules; the card's primary class is its longest kernel's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .metrics import CATALOG, EVIDENCE_KEYS, derive
from .records import KernelRecord
from .rules import LoadedRules, evaluate

SCHEMA_VERSION = "1.0"
SCOPE = (
    "Isolated replays under Nsight Compute kernel replay (each kernel serialised, caches flushed"
    " between passes, clocks left unlocked with --clock-control none); classifications are per"
    " kernel by the first matching rule, and a card's primary class is its longest kernel's;"
    " not attribution within the integrated pipeline; MFU not implied."
)
CardStatus = Literal["classified", "unresolved", "failed", "no_kernels"]
UNRESOLVED = "unresolved_no_dominant_limiter"


class KernelCard(BaseModel):
    """One kernel of a card: legacy fields first, then provenance."""

    model_config = ConfigDict(extra="forbid")
    kernel: str = Field(description="demangled kernel name, verbatim")
    metrics: dict[str, float | None] = Field(description="card metric key -> value in card units")
    classification: str | None
    rule: str | None = Field(description="text of the rule that matched")
    evidence: dict[str, float | None]
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
    nominal_mac_flops: int | None = None
    nominal_bytes: int | None = None
    summed_kernel_us: float | None
    achieved_tflops: float | None = Field(default=None, description="nominal FLOPs / summed time")
    kernels: list[KernelCard]
    dominant_kernel: str | None
    primary: str | None
    primary_rule: str | None
    alternative_explanation: str | None
    counter_experiment: str | None
    status: CardStatus
    error: str | None = None
    gpu: dict[str, Any] = Field(default_factory=dict)
    missing_metrics: list[str] = Field(default_factory=list)


class CardFile(BaseModel):
    """A whole cards file."""

    model_config = ConfigDict(extra="forbid")
    schema_version: str = SCHEMA_VERSION
    generated_at: str
    tool_version: str
    rules: str
    rules_id: str
    rules_file: str
    rules_sha256: str
    inputs: list[str]
    input_errors: list[str] = Field(default_factory=list)
    cards: list[Card]
    summary: dict[str, int]
    by_stage: dict[str, dict[str, int]]
    scope: str = SCOPE


def kernel_card(record: KernelRecord, rules: LoadedRules) -> KernelCard:
    """Classify one kernel row."""
    values = {spec.key: record.values.get(spec.key) for spec in CATALOG}
    full = {**values, **derive(values)}
    verdict = evaluate(rules.rules, full)
    return KernelCard.model_construct(  # trusted values; the file is validated in tests
        kernel=record.demangled,
        metrics=values,
        classification=verdict.rule.name,
        rule=verdict.rule.text,
        evidence={k: full.get(k) for k in EVIDENCE_KEYS},
        mangled_name=record.mangled,
        demangled_name=record.demangled,
        function_name=record.function,
        nvtx_range="/".join(record.nvtx_ranges) or None,
        report=record.report,
        launch_index=[record.range_index, record.action_index],
        replay_passes=record.replay_passes,
        metric_sources=dict(record.sources),
        missing_metrics=list(record.missing),
        unchecked_metrics=verdict.unchecked,
    )


def dominant(kernels: list[KernelCard]) -> KernelCard | None:
    """The longest kernel (first of equals); None if no kernel has a duration."""
    timed = [k for k in kernels if k.metrics.get("dur_us") is not None]
    return max(timed, key=lambda k: k.metrics["dur_us"] or 0.0) if timed else None


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
    """A card from its classified kernels; the verdict is the dominant kernel's."""
    top = dominant(kernels)
    rule = next((r for r in rules.rules.rules if top and r.name == top.classification), None)
    durations = [k.metrics.get("dur_us") for k in kernels]
    summed = round(sum(d for d in durations if d is not None), 6) if kernels else None
    flops = fields.get("nominal_mac_flops")
    status: CardStatus
    if fields.get("error"):
        status = "failed"
    elif not kernels:
        status = "no_kernels"
    else:
        status = "unresolved" if top is None or top.classification == UNRESOLVED else "classified"
    missing = sorted({m for k in kernels for m in k.missing_metrics})
    if any(d is None for d in durations):
        missing = sorted({*missing, "dur_us"})
    return Card.model_construct(  # trusted values; the file is validated in tests
        group=group,
        stage=stage,
        op=op,
        kernels=kernels,
        summed_kernel_us=summed,
        achieved_tflops=round(flops / (summed * 1e6), 3) if flops and summed else None,
        dominant_kernel=top.kernel if top else None,
        primary=top.classification if top else None,
        primary_rule=rule.text if rule else None,
        alternative_explanation=rule.alternative_explanation if rule else None,
        counter_experiment=rule.counter_experiment if rule else None,
        status=status,
        gpu=gpu_of(records),
        missing_metrics=missing,
        **fields,
    )


def gpu_of(records: list[KernelRecord]) -> dict[str, Any]:
    """Device facts of the first kernel, plus the range of SM clocks seen across kernels."""
    if not records:
        return {}
    gpu: dict[str, Any] = dict(records[0].device)
    clocks = [r.values.get("sm_clock_ghz") for r in records]
    seen = [c for c in clocks if c is not None]
    if seen:
        gpu["sm_clock_ghz_min"], gpu["sm_clock_ghz_max"] = min(seen), max(seen)
    return gpu


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
