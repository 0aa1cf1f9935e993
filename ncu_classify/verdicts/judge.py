"""Judging: the one place where a kernel's class and a card's verdict are decided, by classify
on fresh kernel rows and by reclassify on a cards file (ours or a converted legacy one).

A kernel is classified by the first rule that holds on its metrics (else its evidence block, for
legacy kernels whose metrics were lost); a card's primary class is its longest kernel's. Judging
our own cards again under the same rules changes nothing but `reclassified_at`: every other
field, and the order of cards and kernels, is kept; failed and incomplete cards stay so.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from .._version import __version__
from ..cards.drill import DrillDown, DrillSource, Settled
from ..cards.figures import Roofline
from ..cards.hot_units import HotUnit, name_units
from ..cards.machine import GpuInfo
from ..cards.model import (
    CLASSIFY_FIELDS,
    CLASSIFY_KERNEL_FIELDS,
    RECORDED_ONLY,
    SCHEMA_VERSION,
    UNRESOLVED,
    Card,
    CardFile,
    KernelCard,
)
from ..cards.rollup import card_class, count_classes, dominant
from ..cards.verdict import CardVerdict, KernelVerdict
from ..core.clock import utc_now
from ..core.metrics import CATALOG, CATALOG_KEYS, EVIDENCE_KEYS, PERSISTENT, derive
from ..core.trusted import trusted
from ..read.rows import KernelRow
from .drill import build_drill_down
from .margins import verdict_margin
from .roofline import card_roofline, compute_dtype, kernel_roofline
from .rules import LoadedRules, evaluate
from .tiles import tile_note

OWN_COUNTERS = "the warp-state counters of the kernel's own report"
CATALOG_KEY_SET = frozenset(CATALOG_KEYS)


def kernel_values(
    metrics: Mapping[str, float | None], evidence: Mapping[str, float | None]
) -> dict[str, float | None]:
    """Rule inputs of a kernel: its metrics and derived ratios, else its evidence block (legacy
    kernels whose metrics were lost keep only their evidence)."""
    values: dict[str, float | None] = (
        dict(metrics)  # a kernel read by this tool: every catalog key (a C-level copy)
        if metrics.keys() == CATALOG_KEY_SET
        else {spec.key: metrics.get(spec.key) for spec in CATALOG}
    )
    values.update(derive(values))
    for key in EVIDENCE_KEYS:
        if values[key] is None:
            values[key] = evidence.get(key)
    return values


def kernel_verdict(
    metrics: Mapping[str, float | None], evidence: Mapping[str, float | None], rules: LoadedRules
) -> KernelVerdict:
    """A kernel's class, rule text, evidence and unchecked metrics under `rules`; a kernel with
    no evidence at all gets no class rather than the fallback."""
    values = kernel_values(metrics, evidence)
    fresh = {k: values[k] for k in EVIDENCE_KEYS}
    if all(v is None for v in fresh.values()):
        return KernelVerdict(
            classification=None, rule=None, evidence=fresh, unchecked_metrics=[*fresh], margin=None
        )
    verdict = evaluate(rules.rules, values)
    return KernelVerdict(
        classification=verdict.rule.name,
        rule=verdict.rule.text,
        evidence=fresh,
        unchecked_metrics=verdict.unchecked,
        margin=verdict_margin(rules.rules, verdict.rule.name, values),
    )


def classify_kernel(
    kernel: KernelCard, rules: LoadedRules, device: GpuInfo | None = None
) -> KernelCard:
    """The kernel classified again under `rules` (every other field kept); `device` is its
    card's `gpu` (maximum clocks)."""
    verdict = kernel_verdict(kernel.metrics, kernel.evidence, rules)
    notes = _annotations(kernel.metrics, kernel.hot_units, verdict, device)
    return kernel.model_copy(update={**verdict.fields(), **notes})


def _annotations(
    metrics: Mapping[str, float | None],
    hot: dict[str, list[HotUnit]],
    verdict: KernelVerdict,
    device: GpuInfo | None,
) -> dict[str, object]:
    """Roofline figures and the note on the verdict, from the kernel's own figures and the
    device's maximum clocks."""
    roofline = kernel_roofline(metrics, device)
    return {
        "roofline": roofline,
        "verdict_note": compute_note(verdict.classification, hot, roofline),
    }


def kernel_card(record: KernelRow, rules: LoadedRules) -> KernelCard:
    """Classify one kernel row; one whose report holds warp-state counters gets its
    drill-down section from them."""
    metrics = (  # in catalog order, as the reader made it (else rebuilt in that order)
        dict(record.metrics)
        if tuple(record.metrics) == CATALOG_KEYS
        else {spec.key: record.metrics.get(spec.key) for spec in CATALOG}
    )
    verdict = kernel_verdict(metrics, {}, rules)
    hot = name_units(record.hot_units)
    drilled: dict[str, DrillDown] = {}
    if record.stalls is not None:
        source = DrillSource(
            experiment=OWN_COUNTERS,
            report=record.report,
            replay_passes=record.replay_passes,
            dur_us=metrics.get("dur_us"),
        )
        drilled["drill_down"] = build_drill_down(record.stalls, metrics, hot, source)
    return trusted(  # trusted values; the file is validated in tests
        KernelCard,
        CLASSIFY_KERNEL_FIELDS | set(drilled),
        **drilled,
        kernel=record.demangled_name,
        metrics=metrics,
        **verdict.fields(),
        hot_units=hot,
        **_annotations(metrics, hot, verdict, _device(tuple(record.device.items()))),
        mangled_name=record.mangled_name,
        demangled_name=record.demangled_name,
        function_name=record.function_name,
        nvtx_range="/".join(record.nvtx_ranges) or None,
        report=record.report,
        launch_index=[record.range_index, record.action_index],
        replay_passes=record.replay_passes,
        metric_sources=dict(record.metric_sources),
        missing_metrics=list(record.missing_metrics),
    )


def judge(card: Card, rules: LoadedRules, *, kernels_classified: bool = False) -> Card:
    """The card with every kernel classified under `rules` (skipped when the caller just did)
    and the card's verdict: dominant kernel, primary, its rule texts and status."""
    kernels = card.kernels
    if not kernels_classified:
        kernels = [classify_kernel(k, rules, card.gpu) for k in kernels]
    kernels = [_with_tiles(k, card.shape_parameters) for k in kernels]
    update = {"kernels": kernels, **_verdict(card, kernels, rules).fields()}
    settled = settled_verdict(card, kernels)
    if settled is not None or card.settled is not None:
        update["settled"] = settled
    return card.model_copy(update=update)


IDLE_SHARE = 0.85  # SM active over elapsed below this in a persistent grid: say why


def _with_tiles(kernel: KernelCard, shape_parameters: dict[str, Any]) -> KernelCard:
    """A persistent grid whose SMs idle gets, as its note, the tiles it spread over its CTAs
    (where the kernel name and the shape tell them)."""
    if kernel.verdict_note or not _one_wave(kernel):  # most kernels: no values to derive
        return kernel
    values = kernel_values(kernel.metrics, kernel.evidence)
    active = values.get("sm_active_over_elapsed")
    if values.get(PERSISTENT) != 1.0 or active is None:
        return kernel
    note = tile_note(kernel.kernel, shape_parameters, values.get("grid"))
    if active >= IDLE_SHARE or note is None:
        return kernel
    return kernel.model_copy(
        update={"verdict_note": f"persistent grid, SMs active {active:.0%}: {note}"}
    )


def _one_wave(kernel: KernelCard) -> bool:
    """Whether the kernel's grid is one full wave (PERSISTENT), from its waves as
    `kernel_values` reads them (its metrics, else its evidence)."""
    waves = kernel.metrics.get("waves")
    if waves is None:
        waves = kernel.evidence.get("waves")
    return waves is not None and derive({"waves": waves})[PERSISTENT] == 1.0


def settled_verdict(card: Card, kernels: list[KernelCard]) -> Settled | None:
    """The class the dominant kernel's drill-down settles on, for a card whose first verdict
    is unresolved or borderline. A firm verdict stays the card's word: a DRAM-bound cast at
    91 % of DRAM stalls on long_scoreboard because the memory is saturated, not for want of
    bytes in flight (its kernels keep their drill-down sections all the same)."""
    top = dominant(kernels)
    drill = top.drill_down if top is not None else None
    if card.error or card.status == "incomplete" or drill is None or drill.settled is None:
        return None
    firm = top is not None and not (top.margin is not None and top.margin.borderline)
    if firm and top is not None and top.classification != UNRESOLVED:
        return None
    return Settled(
        primary=drill.settled,
        rule=drill.rule,
        counter_experiment=drill.counter_experiment,
        finding=drill.finding,
        settled_by=drill.source.experiment,
        borderline=bool(drill.margin and drill.margin.borderline),
    )


def _verdict(card: Card, kernels: list[KernelCard], rules: LoadedRules) -> CardVerdict:
    """The card's verdict. A card with an error stays failed and a truncated one stays
    incomplete (facts about the data, not the rules); neither gets a primary class."""
    top = dominant(kernels)
    named = top.kernel if top else None
    if card.error:
        return CardVerdict("failed", dominant_kernel=named)
    if card.status == "incomplete":  # its named dominant kernel is not listed: kept
        return CardVerdict("incomplete", kept=("dominant_kernel",))
    if not kernels:
        return CardVerdict("no_kernels")
    rule = next((r for r in rules.rules.rules if top and r.name == top.classification), None)
    if top is None or rule is None:
        return CardVerdict("unresolved", dominant_kernel=named)
    return CardVerdict(
        "unresolved" if rule.name == UNRESOLVED else "classified",
        dominant_kernel=top.kernel,
        primary=rule.name,
        primary_rule=rule.text,
        alternative_explanation=rule.alternative_explanation,
        counter_experiment=rule.counter_experiment,
    )


def build_card(
    *,
    group: str,
    stage: str,
    op: str,
    kernels: list[KernelCard],
    rules: LoadedRules,
    records: list[KernelRow],
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
    untimed = {name for name in RECORDED_ONLY if fields.get(name) is None}
    card = trusted(  # trusted values; the file is validated in tests
        Card,
        CLASSIFY_FIELDS - untimed,
        group=group,
        stage=stage,
        op=op,
        kernels=kernels,
        summed_kernel_us=summed,
        achieved_tflops=round(flops / (summed * 1e6), 3) if flops and summed else None,
        **CardVerdict("unresolved").fields(),  # the verdict is decided by judge
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
        **fields,
    )
    return judge(card, rules, kernels_classified=True)


def compute_note(
    classification: str | None, hot: dict[str, list[HotUnit]], roofline: Roofline | None
) -> str | None:
    """What to tell about a compute-bound verdict whose busiest SM unit is not a math pipe."""
    units = hot.get("sm") or []
    if classification != "compute_bound" or not units or units[0].kind == "math":
        return None
    top = units[0]
    note = (
        f"compute-bound by SM throughput, but the busiest SM unit is {top.label} ({top.unit},"
        f" {top.pct:.1f} %), not a math pipe"
    )
    if roofline and roofline.achieved_tflops is not None and roofline.pct_of_roof is not None:
        note += (
            f": {roofline.achieved_tflops:g} TFLOP/s, {roofline.pct_of_roof:.1f} % of its"
            f" {roofline.binding} roof"
        )
    return note


def reclassify(cards: CardFile, rules: LoadedRules, *, at: str | None = None) -> CardFile:
    """`cards` judged again under `rules`, stamped with the rules' identity and `at` (now)."""
    judged = [judge(card, rules) for card in cards.cards]
    summary, by_stage = count_classes(map(card_class, judged))
    return cards.model_copy(
        update={
            "schema_version": SCHEMA_VERSION,
            "reclassified_at": at or utc_now(),
            "tool_version": __version__,
            "rules": rules.rules.summary_text(),
            "rules_id": rules.rules.id,
            "rules_file": rules.file_name,
            "rules_sha256": rules.sha256,
            "rules_yaml": rules.text,
            "cards": judged,
            "summary": summary,
            "by_stage": by_stage,
        }
    )


@functools.lru_cache(maxsize=64)
def _device(facts: tuple[tuple[str, Any], ...]) -> GpuInfo:
    """A kernel's device facts as a GpuInfo (reports of one GPU share one: cached)."""
    return GpuInfo.model_validate(dict(facts))


def gpu_of(records: list[KernelRow]) -> GpuInfo:
    """The GPU of a card: device facts of its first kernel, plus the range of SM clocks seen
    across its kernels."""
    if not records:
        return GpuInfo()
    # the report's facts validated once per report (a fact of an odd kind is kept aside, not
    # fatal); the clocks are the reader's own floats
    device = _device(tuple(records[0].device.items()))
    seen = [c for r in records if (c := r.metrics.get("sm_clock_ghz")) is not None]
    if not seen:
        return device
    return device.model_copy(update={"sm_clock_ghz_min": min(seen), "sm_clock_ghz_max": max(seen)})
