"""Repeated measurements onto cards (capture --repeat N): each kernel's figures as spreads, the
card's summed time per repeat, the clock regime, and whether the verdict survives the spread.

Repeat 1 is the counters launch the card's figures come from; repeats 2..N are matched to its
kernels by position and must run the same kernels (a repeat that ran others is left out, with a
note). With counters once (basis `durations`), a metric in % of peak over elapsed time is the
work counted once over each repeat's elapsed time: its spread is the duration's, scaled
(`scaled`); other metrics have no spread. A verdict is `stable` when re-judging the kernel with
the deciding metric, and the nearest rival's, at every end of their 95 % intervals gives the
same class; the distances to the thresholds are also given in standard deviations."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..capture.manifest import Manifest
from ..cards.model import Card, KernelCard
from ..cards.repeats import Basis, ClockRegime, KernelRepeats, Measurement, Stability
from ..cards.rollup import dominant
from ..core.metrics import CATALOG, EXACT_METRICS
from ..core.noise import RunToRun
from ..core.stats import Spread, six_figures, spread
from ..read.rows import KernelRow
from .judge import kernel_values
from .rules import LoadedRules, evaluate

# % of peak over elapsed time: the work counted once over the elapsed cycles of each repeat.
SCALED = tuple(s.key for s in CATALOG if s.names[0].endswith("pct_of_peak_sustained_elapsed"))
CLOCKS = ("sm_clock_ghz", "dram_clock_ghz")
Z95 = 1.96  # the run-to-run part of an interval: a normal 95 % quantile (many captures)


def by_repeat(records: list[KernelRow]) -> dict[int, list[KernelRow]]:
    """Kernel rows per repeat number (a row outside any repeat range is repeat 1)."""
    out: dict[int, list[KernelRow]] = {}
    for record in records:
        out.setdefault(record.repeat or 1, []).append(record)
    return dict(sorted(out.items()))


def with_repeats(
    card: Card,
    repeats: Mapping[int, list[KernelRow]],
    manifest: Manifest,
    rules: LoadedRules,
    noise: RunToRun | None = None,
) -> Card:
    """The card with its kernels' repeats and its measurement, when the capture repeated it and
    the card has kernels; otherwise the card as it was."""
    if manifest.repeat < 2 or not card.kernels or card.error:
        return card
    basis: Basis = "counters" if manifest.repeat_counters else "durations"
    usable, notes = _usable(card.kernels, repeats)
    if len(usable) < manifest.repeat - 1:
        notes.append(
            f"{manifest.repeat - 1 - len(usable)} of the {manifest.repeat - 1} repeats asked"
            " are not measured (the manifest's times_status says why)"
        )
    kernels, durations = [], []
    for i, kernel in enumerate(card.kernels):
        rows = [r[i] for r in usable]
        series = _series(kernel.metrics.get("dur_us"), [r.metrics.get("dur_us") for r in rows])
        durations.append(series)
        measured = _kernel_repeats(kernel, rows, series, basis)
        kernels.append(kernel.model_copy(update={"repeats": measured}))
    top = dominant(kernels)
    measurement = Measurement(
        repeats=1 + len(usable),
        basis=basis,
        summed_kernel_us=_summed(durations),
        stability=stability(top, rules, noise) if top is not None and usable else None,
        clock=_clock(kernels, [r for rows in usable for r in rows], manifest),
        notes=notes,
    )
    return card.model_copy(update={"kernels": kernels, "measurement": measurement})


def _usable(
    kernels: list[KernelCard], repeats: Mapping[int, list[KernelRow]]
) -> tuple[list[list[KernelRow]], list[str]]:
    """The repeats (2..N) that ran the card's kernels in the same order, and a note for each
    that did not."""
    names = [k.mangled_name for k in kernels]
    usable, notes = [], []
    for number, rows in repeats.items():
        if number == 1:
            continue
        if [r.mangled_name for r in rows] == names:
            usable.append(rows)
        else:
            notes.append(
                f"repeat {number} left out: it ran {len(rows)} kernels"
                f" ({', '.join(sorted({r.function_name for r in rows})) or 'none'}), not the card's"
                f" {len(names)}"
            )
    return usable, notes


def _kernel_repeats(
    kernel: KernelCard, rows: list[KernelRow], durations: list[float], basis: Basis
) -> KernelRepeats:
    """A kernel's figures over its first launch and the matched repeat rows (`durations`: its
    duration per launch, empty where one is unknown)."""
    first = kernel.metrics
    metrics: dict[str, Spread] = {}
    scaled: list[str] = []
    if basis == "counters":
        for spec in CATALOG:
            series = _series(first.get(spec.key), [r.metrics.get(spec.key) for r in rows])
            if series and spec.key != "dur_us":
                metrics[spec.key] = spread(series)
    elif durations:
        for key in SCALED:
            value = first.get(key)
            if value is not None and all(d > 0 for d in durations):
                metrics[key] = spread([value * durations[0] / d for d in durations])
                scaled.append(key)
    return KernelRepeats(
        n=1 + len(rows),
        basis=basis,
        dur_us=spread(durations) if durations else None,
        metrics=metrics,
        scaled=scaled,
    )


def _series(first: float | None, rest: list[float | None]) -> list[float]:
    """The first value and the repeats' where every one is known, else nothing."""
    values = [first, *rest]
    return [v for v in values if v is not None] if None not in values else []


def _summed(durations: list[list[float]]) -> Spread | None:
    """The card's kernel time per launch, where every kernel has every launch's duration."""
    if not durations or any(len(d) != len(durations[0]) or not d for d in durations):
        return None
    return spread([sum(column) for column in zip(*durations, strict=True)])


@dataclass(frozen=True)
class Interval:
    """Where a metric's value may lie in another capture: its own spread's 95 % interval
    widened by the run-to-run sd (`half` combines the two; `sd` both sds in quadrature)."""

    center: float
    half: float
    sd: float

    def ends(self) -> tuple[float, float]:
        return (self.center - self.half, self.center + self.half)


def metric_interval(
    metric: str, value: float | None, own: Spread | None, noise: RunToRun | None
) -> Interval | None:
    """The interval of `metric`: its spread (if measured) and the run-to-run sd (if known)
    combined in quadrature; None when neither is known or the metric is a launch figure."""
    if metric in EXACT_METRICS:
        return None
    center = own.mean if own is not None else value
    if center is None:
        return None
    own_half = own.half_width() if own is not None else None
    own_sd = own.sd if own is not None else None
    between = noise.sd(metric, center) if noise is not None else None
    if own_half is None and not between:
        return None
    half = math.hypot(own_half or 0.0, Z95 * (between or 0.0))
    return Interval(center, half, math.hypot(own_sd or 0.0, between or 0.0))


def stability(
    kernel: KernelCard, rules: LoadedRules, noise: RunToRun | None = None
) -> Stability | None:
    """Whether `kernel`'s verdict survives the intervals of its deciding and rival metrics."""
    margin, measured = kernel.margin, kernel.repeats
    if margin is None or measured is None or kernel.classification is None:
        return None
    spreads = {**measured.metrics, **({"dur_us": measured.dur_us} if measured.dur_us else {})}
    values = kernel_values(kernel.metrics, kernel.evidence)
    intervals = {
        m: metric_interval(m, values.get(m), spreads.get(m), noise)
        for m in dict.fromkeys((margin.metric, margin.alternative_metric))
        if m
    }
    moving = {m: i for m, i in intervals.items() if i is not None}
    flips = None
    for corner in itertools.product(*[i.ends() for i in moving.values()]):
        fired = evaluate(rules.rules, {**values, **dict(zip(moving, corner, strict=True))})
        if fired.rule.name != kernel.classification:
            flips = fired.rule.name
            break
    own, rival = intervals.get(margin.metric or ""), intervals.get(margin.alternative_metric or "")
    return Stability(
        verdict="unmeasured" if not moving else "unstable" if flips else "stable",
        metric=margin.metric,
        interval=_rounded(own),
        margin_sd=_in_sd(margin.distance, own),
        rival=margin.alternative,
        rival_metric=margin.alternative_metric,
        rival_interval=_rounded(rival),
        rival_margin_sd=_in_sd(margin.alternative_distance, rival),
        flips_to=flips,
        why=_why(kernel, margin.metric, moving, flips),
    )


def _rounded(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [six_figures(e) for e in interval.ends()]


def _in_sd(distance: float | None, interval: Interval | None) -> float | None:
    if distance is None or interval is None or not interval.sd:
        return None
    return float(f"{distance / interval.sd:.3g}")


def _why(
    kernel: KernelCard, metric: str | None, moving: Mapping[str, Interval], flips: str | None
) -> str:
    """One line: what moved, within what, and what it did to the class."""
    if not moving:
        return (
            f"{kernel.classification}: its deciding metric ({metric or 'none'}) and the"
            " rival's have no spread, measured or run-to-run"
        )
    shown = ", ".join(
        f"{m} {i.center:.4g} [{i.ends()[0]:.4g}, {i.ends()[1]:.4g}]" for m, i in moving.items()
    )
    if flips:
        return f"{kernel.classification} -> {flips} inside the run-to-run intervals: {shown}"
    return f"{kernel.classification} at every end of the run-to-run intervals: {shown}"


def _clock(kernels: list[KernelCard], rows: list[KernelRow], manifest: Manifest) -> ClockRegime:
    """The clock settings and the clocks seen by the card's kernels (all repeats that read
    them: every launch with --repeat-counters, the counters launch otherwise)."""
    seen: dict[str, list[float]] = {key: [] for key in CLOCKS}
    for values in [k.metrics for k in kernels] + [r.metrics for r in rows]:
        for key in CLOCKS:
            value = values.get(key)
            if value is not None:
                seen[key].append(value)
    return ClockRegime(
        clock_control=manifest.host.clock_control,
        pipeline_boost_state=manifest.host.pipeline_boost_state,
        sm_clock_ghz=spread(seen["sm_clock_ghz"]) if seen["sm_clock_ghz"] else None,
        dram_clock_ghz=spread(seen["dram_clock_ghz"]) if seen["dram_clock_ghz"] else None,
    )
