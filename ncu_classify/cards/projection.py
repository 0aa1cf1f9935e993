"""A cards file projected onto another GPU (`ncu-classify project`): each kernel's measured time
scaled by the rule its class calls for, with the GPU table's figures (`cards.gpus`).

The model. A kernel keeps on the target the fraction of its binding roof it reached on the
source: a compute-bound kernel's time scales by the source's dense peak of the FLOP family it
used over the target's; a DRAM- or L2-bound kernel's by the bandwidth of that level; a kernel
bound by the SM array without FLOPs to count (issue, ALU, L1) by SMs x SM clock. A wave- or
latency-bound kernel keeps its cycles per wave: its time scales by the SM clock, and by the
waves the same grid takes on the target's SM count (ceil(grid / (SMs x CTAs per SM)): a
132-CTA persistent grid on a 114-SM part is two waves). Then no kernel runs faster than its
work over the target's peak at any level it uses (its measured share of each roof, capped at
100 %, scaled by the same ratio): the floor. With the same GPU on both sides every ratio is 1.
A kernel without a rule, a figure or a counter its rule needs is listed with why, not guessed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TypeVar

from ..core.errors import CardsError
from .gpus import GpuSpec, gpu_for_device
from .machine import GpuInfo, first_gpu
from .model import SCHEMA_VERSION, Card, CardFile, KernelCard
from .projected import KernelProjection, Projection, Unprojected
from .projection_figures import LEVELS, Ratios, project_card_roofline, project_roofline

MODEL = (
    "Each kernel keeps the fraction of its binding roof it reached on the source GPU; its time"
    " scales by the rule its class calls for, with the GPU table's figures (datasheet peaks at"
    " the maximum clocks), and never falls below its work over the target's peak at any level"
    " it uses. Projected, not measured: dur_us and what is made from it (summed times,"
    " achieved rates, a kernel's roofline, a card's MFU) are the target's; classes, verdicts"
    " and every other metric are the source GPU's measurements."
)
RULES = {
    "compute": "x source dense peak / target dense peak of the FLOP family the kernel used",
    "sm_throughput": "x (source SMs x SM clock) / (target SMs x SM clock)",
    "dram": "x source DRAM bandwidth / target DRAM bandwidth",
    "l2": "x source L2 bandwidth / target L2 bandwidth",
    "l1": "x (source SMs x SM clock) / (target SMs x SM clock) (L1 is per SM, at the SM clock)",
    "waves": "x source SM clock / target SM clock x ceil(target waves) / ceil(source waves),"
    " target waves = source waves x source SMs / target SMs",
    "latency": "as waves: the cycles of each wave kept, at the target's SM clock",
}
ASSUMPTIONS = [
    "both GPUs run at the table's maximum SM clock and peak bandwidths (the source's measured"
    " clocks are not used, so the same GPU on both sides is the identity)",
    "the same kernels are launched with the same grids and the same CTAs per SM on the target"
    " (a library that picks another kernel, or a persistent kernel that sizes its grid to the"
    " GPU, would not)",
    "wgmma kernels (hgmma) reach the same fraction of the target's dense peak of their dtype on"
    " any architecture; mma.sync kernels (hmma) are projected only within one compute"
    " capability (no datasheet gives their peak)",
    "every ceiling of the target (a kernel's roofline, a card's dense peak) is the one ncu"
    " measured on the source x the table's target / source figure; a kernel keeps its work"
    " (FLOPs, bytes per level), so its roofline and the card's MFU are found again from them",
    "unresolved and latency-limited kernels scale as latency-bound ones",
    "classes, verdicts and every metric but dur_us are the source's: the projection moves"
    " time, it does not re-measure",
]
CLASS_RULES = {
    "dram_bandwidth_bound": "dram",
    "l2_bandwidth_bound": "l2",
    "l1_shared_bound": "l1",
    "issue_bound": "sm_throughput",
    "tensor_pipe_bound": "compute",
    "fp32_pipe_bound": "compute",
    "partial_wave_tail": "waves",
    "grid_under_one_wave": "waves",
    "tail_after_full_waves": "waves",
    "idle_sms_in_persistent_grid": "waves",
    "latency_or_occupancy_limited": "latency",
    "unresolved_no_dominant_limiter": "latency",
}
LIGHT_RULES = ("dram", "waves")  # what a light kernel's counters carry (capture --light-after)
M = TypeVar("M", Card, KernelCard)


def kernel_rule(kernel: KernelCard) -> str | None:
    """The rule a kernel's class calls for (compute_bound splits: compute where its roofline
    binds at compute, sm_throughput where the SM array is busy without a FLOP roof)."""
    if kernel.classification == "compute_bound":
        roof = kernel.roofline
        return "compute" if roof is not None and roof.binding == "compute" else "sm_throughput"
    return CLASS_RULES.get(kernel.classification or "")


def _waves(kernel: KernelCard, ratios: Ratios) -> tuple[float | None, str | None]:
    """ceil(target waves) / ceil(source waves) for the same grid and CTAs per SM."""
    waves = kernel.metrics.get("waves")
    if not waves:
        return None, "the kernel card has no launch__waves_per_multiprocessor (waves)"
    target = waves * ratios.sms()
    return math.ceil(target - 1e-9) / math.ceil(waves - 1e-9), None


def rule_factor(kernel: KernelCard, rule: str, ratios: Ratios) -> tuple[float | None, str | None]:
    """The factor a rule applies to the kernel's time, or None and why it cannot."""
    if rule == "compute":
        return ratios.compute(kernel.roofline.family if kernel.roofline else None)
    if rule == "sm_throughput":
        return ratios.clock() * ratios.sms(), None
    if rule in ("dram", "l2", "l1"):
        return ratios.level(rule)
    waves, why = _waves(kernel, ratios)
    return (None, why) if waves is None else (ratios.clock() * waves, None)


def floor_factor(kernel: KernelCard, ratios: Ratios) -> tuple[float, str | None]:
    """The largest of the kernel's measured share of each roof (capped at 1) x that roof's
    ratio: the time it needs at least on the target, as a factor of its measured time."""
    roof = kernel.roofline
    best: tuple[float, str | None] = (0.0, None)
    if roof is None:
        return best
    shares = {"compute": (roof.achieved_tflops, roof.compute_ceiling_tflops)}
    shares |= {lvl: (roof.achieved_tbps.get(lvl), roof.bandwidth_tbps.get(lvl)) for lvl in LEVELS}
    for name, (achieved, peak) in shares.items():
        if achieved is None or not peak:
            continue
        ratio = ratios.compute(roof.family)[0] if name == "compute" else ratios.level(name)[0]
        if ratio is not None and min(achieved / peak, 1.0) * ratio > best[0]:
            best = (min(achieved / peak, 1.0) * ratio, name)
    return best


def project_kernel(kernel: KernelCard, ratios: Ratios, light: bool = False) -> KernelProjection:
    """How one kernel's time projects onto the target (its factor), or why it does not. A
    kernel captured with the light list (`light`) projects only by the rules its counters
    carry (DRAM bandwidth, waves): its other classes rest on counters it lacks."""
    source_us = kernel.metrics.get("dur_us")
    rule = kernel_rule(kernel)

    def unprojected(why: str) -> KernelProjection:
        return KernelProjection(rule=None, factor=None, source_us=source_us, why=why)

    if source_us is None:
        return unprojected("the kernel card has no measured time (dur_us)")
    if rule is None:
        return unprojected(f"class {kernel.classification!r} has no projection rule")
    if light and rule not in LIGHT_RULES:
        return unprojected(
            f"captured with the light metric list: the {rule} rule of its class"
            f" ({kernel.classification}) needs sm_pct, l2_pct or FLOPs, not measured"
        )
    if rule == "compute" and kernel.roofline is None:
        return unprojected("a compute-bound kernel without a roofline (no FLOP counters)")
    factor, why = rule_factor(kernel, rule, ratios)
    if factor is None:
        return unprojected(why or "no factor")
    floor, level = floor_factor(kernel, ratios)
    lifted = floor > factor * (1 + 1e-9)
    return KernelProjection(
        rule=rule,
        factor=round(max(factor, floor), 6),
        source_us=source_us,
        floor=level if lifted else None,
    )


def source_gpu(cards: CardFile, path: Path, given: str | None) -> tuple[str, GpuSpec]:
    """The table's GPU the cards were measured on: named by `--from`, else their gpu.name;
    CardsError if the file is legacy, already projected, or from a GPU the table lacks."""
    from .gpus import gpu_spec

    if cards.source_format == "legacy":
        raise CardsError(
            f"{path}: legacy cards carry no roofline or GPU to project; classify the reports"
        )
    if cards.projection is not None:
        raise CardsError(f"{path}: already a projection (onto {cards.projection.target})")
    if given is not None:
        key, spec = gpu_spec(given, "--from")
        _check_from(cards, path, key, spec)
        return key, spec
    names = sorted({card.gpu.name for card in cards.cards if card.gpu.name})
    if len(names) > 1:
        raise CardsError(
            f"{path}: measured on {len(names)} GPUs ({', '.join(names)}); project the cards of"
            " one GPU at a time"
        )
    name = first_gpu(card.gpu for card in cards.cards).name
    found = gpu_for_device(name)
    if found is None:
        raise CardsError(
            f"{path}: measured on {name or 'a GPU not recorded'!s}, which the GPU table lacks;"
            " name the table's GPU it is with --from"
        )
    return found


def _check_from(cards: CardFile, path: Path, key: str, spec: GpuSpec) -> None:
    """CardsError if a card records an SM count or compute capability other than `--from`'s:
    the table's ratios (SMs, waves, peaks) would be another GPU's."""
    for index, card in enumerate(cards.cards):
        gpu = card.gpu
        cc = f"{gpu.cc_major}.{gpu.cc_minor}" if gpu.cc_major is not None else None
        sms = spec.sm_count.value
        if (gpu.sm_count is not None and gpu.sm_count != sms) or (
            cc is not None and cc != spec.compute_capability
        ):
            raise CardsError(
                f"{path}: cards[{index}] was measured on {gpu.name or 'a GPU'} ({gpu.sm_count}"
                f" SMs, compute capability {cc}), not on {key} ({sms:g} SMs, compute"
                f" capability {spec.compute_capability}): --from names the GPU the cards ran on"
            )


def project(
    cards: CardFile, measured: str, source: tuple[str, GpuSpec], target: tuple[str, GpuSpec]
) -> CardFile:
    """The cards file projected from `source` onto `target` (table keys and GPUs)."""
    ratios = Ratios(source[1], target[1])
    gpu = _target_info(target[1])
    out: list[Card] = []
    unprojected: list[Unprojected] = []
    for card in cards.cards:
        kernels = []
        for kernel in card.kernels:
            done = project_kernel(kernel, ratios, bool(card.captured_light))
            kernels.append(_projected_kernel(kernel, done, ratios))
            if done.rule is None:
                why = done.why or ""
                unprojected.append(Unprojected(group=card.group, kernel=kernel.kernel, why=why))
        out.append(_projected_card(card, kernels, gpu, ratios))
    count = sum(len(card.kernels) for card in cards.cards)
    projection = Projection(
        measured=measured,
        source=source[0],
        target=target[0],
        source_gpu=source[1],
        target_gpu=target[1],
        model=MODEL,
        rules=RULES,
        assumptions=ASSUMPTIONS,
        kernels=count,
        projected_kernels=count - len(unprojected),
        unprojected=unprojected,
    )
    update = {"cards": out, "projection": projection, "schema_version": SCHEMA_VERSION}
    return cards.model_copy(update=update)


def _target_info(spec: GpuSpec) -> GpuInfo:
    """The card's `gpu` for the target: the table's figures, no measured clock."""
    major, _, minor = spec.compute_capability.partition(".")
    clock = spec.sm_clock_max_mhz.value
    l2 = spec.l2_bytes.value
    return GpuInfo(
        name=spec.device_names[0],
        sm_count=int(spec.sm_count.value or 0),
        l2_bytes=int(l2) if l2 is not None else None,
        cc_major=int(major),
        cc_minor=int(minor or 0),
        sm_clock_max_khz=int(clock * 1000) if clock is not None else None,
    )


def _projected_kernel(kernel: KernelCard, done: KernelProjection, ratios: Ratios) -> KernelCard:
    """The kernel with its projected time and roofline (neither where it was not projected)."""
    metrics = dict(kernel.metrics)
    roofline = None
    if done.factor is not None and done.source_us is not None:
        metrics["dur_us"] = round(done.source_us * done.factor, 6)
        if kernel.roofline is not None:
            roofline = project_roofline(kernel.roofline, done.factor, ratios)
    else:
        metrics["dur_us"] = None
    return _copy(kernel, metrics=metrics, projection=done, repeats=None, roofline=roofline)


def _projected_card(card: Card, kernels: list[KernelCard], gpu: GpuInfo, ratios: Ratios) -> Card:
    """The card with its projected kernels, summed time, achieved TFLOP/s and MFU figures."""
    times = [k.metrics.get("dur_us") for k in kernels]
    summed = round(sum(t for t in times if t is not None), 6) if None not in times else None
    if not kernels:
        summed = card.summed_kernel_us
    flops = card.nominal_mac_flops
    achieved = round(flops / (summed * 1e6), 3) if flops and summed else None
    changes: dict[str, object] = {"kernels": kernels, "summed_kernel_us": summed, "gpu": gpu}
    changes |= {"achieved_tflops": achieved, "measurement": None}
    if card.roofline is not None:
        params = card.shape_parameters
        changes["roofline"] = project_card_roofline(card.roofline, params, flops, summed, ratios)
    missing = sum(t is None for t in times)
    if missing:
        changes["notes"] = [
            *card.notes,
            f"projected: {missing} of {len(kernels)} kernels not projected (see each kernel's"
            " projection.why): no summed time",
        ]
    return _copy(card, **changes)


def _copy(model: M, **changes: object) -> M:
    """`model` with `changes`, the fields it had set plus those changed; a None for one of
    DROPPED leaves that field out (written only where it holds something)."""
    data = {key: getattr(model, key) for key in model.model_fields_set}
    for key, value in changes.items():
        if value is None and key in DROPPED:
            data.pop(key, None)
        else:
            data[key] = value
    return type(model).model_validate(data)


DROPPED = ("repeats", "measurement", "roofline")
