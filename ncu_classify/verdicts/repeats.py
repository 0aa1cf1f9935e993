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
from collections.abc import Mapping

from ..capture.manifest import Manifest
from ..cards.model import Card, KernelCard
from ..cards.repeats import Basis, ClockRegime, KernelRepeats, Measurement, Stability
from ..cards.rollup import dominant
from ..core.metrics import CATALOG, EXACT_METRICS
from ..core.stats import Spread, spread
from ..read.records import KernelRecord
from .judge import kernel_values
from .rules import LoadedRules, evaluate

# % of peak over elapsed time: the work counted once over the elapsed cycles of each repeat.
SCALED = tuple(s.key for s in CATALOG if s.names[0].endswith("pct_of_peak_sustained_elapsed"))
CLOCKS = ("sm_clock_ghz", "dram_clock_ghz")


def by_repeat(records: list[KernelRecord]) -> dict[int, list[KernelRecord]]:
    """Kernel rows per repeat number (a row outside any repeat range is repeat 1)."""
    out: dict[int, list[KernelRecord]] = {}
    for record in records:
        out.setdefault(record.repeat or 1, []).append(record)
    return dict(sorted(out.items()))


def with_repeats(
    card: Card, repeats: Mapping[int, list[KernelRecord]], manifest: Manifest, rules: LoadedRules
) -> Card:
    """The card with its kernels' repeats and its measurement, when the capture repeated it and
    the card has kernels; otherwise the card as it was."""
    if manifest.repeat < 2 or not card.kernels or card.error:
        return card
    basis: Basis = "counters" if manifest.repeat_counters else "durations"
    usable, notes = _usable(card.kernels, repeats)
    kernels, durations = [], []
    for i, kernel in enumerate(card.kernels):
        rows = [r[i] for r in usable]
        series = _series(kernel.metrics.get("dur_us"), [r.values.get("dur_us") for r in rows])
        durations.append(series)
        measured = _kernel_repeats(kernel, rows, series, basis)
        kernels.append(kernel.model_copy(update={"repeats": measured}))
    top = dominant(kernels)
    measurement = Measurement(
        repeats=1 + len(usable),
        basis=basis,
        summed_kernel_us=_summed(durations),
        stability=stability(top, rules) if top is not None else None,
        clock=_clock(kernels, [r for rows in usable for r in rows], manifest),
        notes=notes,
    )
    return card.model_copy(update={"kernels": kernels, "measurement": measurement})


def _usable(
    kernels: list[KernelCard], repeats: Mapping[int, list[KernelRecord]]
) -> tuple[list[list[KernelRecord]], list[str]]:
    """The repeats (2..N) that ran the card's kernels in the same order, and a note for each
    that did not."""
    names = [k.mangled_name for k in kernels]
    usable, notes = [], []
    for number, rows in repeats.items():
        if number == 1:
            continue
        if [r.mangled for r in rows] == names:
            usable.append(rows)
        else:
            notes.append(
                f"repeat {number} left out: it ran {len(rows)} kernels"
                f" ({', '.join(sorted({r.function for r in rows})) or 'none'}), not the card's"
                f" {len(names)}"
            )
    return usable, notes


def _kernel_repeats(
    kernel: KernelCard, rows: list[KernelRecord], durations: list[float], basis: Basis
) -> KernelRepeats:
    """A kernel's figures over its first launch and the matched repeat rows (`durations`: its
    duration per launch, empty where one is unknown)."""
    first = kernel.metrics
    metrics: dict[str, Spread] = {}
    scaled: list[str] = []
    if basis == "counters":
        for spec in CATALOG:
            series = _series(first.get(spec.key), [r.values.get(spec.key) for r in rows])
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


def stability(kernel: KernelCard, rules: LoadedRules) -> Stability | None:
    """Whether `kernel`'s verdict survives the intervals of its deciding and rival metrics."""
    margin, measured = kernel.margin, kernel.repeats
    if margin is None or measured is None or kernel.classification is None:
        return None
    spreads = {**measured.metrics, **({"dur_us": measured.dur_us} if measured.dur_us else {})}
    values = kernel_values(kernel.metrics, kernel.evidence)
    moving = [
        m
        for m in dict.fromkeys((margin.metric, margin.alternative_metric))
        if m and m not in EXACT_METRICS and m in spreads and spreads[m].half_width() is not None
    ]
    flips = None
    for corner in itertools.product(*[_ends(spreads[m]) for m in moving]):
        probe = {**values, **dict(zip(moving, corner, strict=True))}
        fired = evaluate(rules.rules, probe).rule.name
        if fired != kernel.classification:
            flips = fired
            break
    return Stability(
        verdict="unmeasured" if not moving else "unstable" if flips else "stable",
        metric=margin.metric,
        interval=_interval(spreads.get(margin.metric or "")),
        margin_sd=_in_sd(margin.distance, spreads.get(margin.metric or "")),
        rival=margin.alternative,
        rival_metric=margin.alternative_metric,
        rival_interval=_interval(spreads.get(margin.alternative_metric or "")),
        rival_margin_sd=_in_sd(
            margin.alternative_distance, spreads.get(margin.alternative_metric or "")
        ),
        flips_to=flips,
        why=_why(kernel, margin.metric, spreads, flips, moving),
    )


def _ends(s: Spread) -> tuple[float, float]:
    assert s.ci95_low is not None and s.ci95_high is not None
    return (s.ci95_low, s.ci95_high)


def _interval(s: Spread | None) -> list[float] | None:
    if s is None or s.ci95_low is None or s.ci95_high is None:
        return None
    return [s.ci95_low, s.ci95_high]


def _in_sd(distance: float | None, s: Spread | None) -> float | None:
    if distance is None or s is None or not s.sd:
        return None
    return float(f"{distance / s.sd:.3g}")


def _why(
    kernel: KernelCard,
    metric: str | None,
    spreads: Mapping[str, Spread],
    flips: str | None,
    moving: list[str],
) -> str:
    """One line: what moved, within what, and what it did to the class."""
    if not moving:
        return (
            f"{kernel.classification}: its deciding metric ({metric or 'none'}) and the"
            " rival's have no measured spread"
        )
    shown = ", ".join(
        f"{m} {spreads[m].mean:.4g} [{spreads[m].ci95_low:.4g}, {spreads[m].ci95_high:.4g}]"
        for m in moving
    )
    if flips:
        return f"{kernel.classification} -> {flips} inside the 95 % intervals: {shown}"
    return f"{kernel.classification} at every end of the 95 % intervals: {shown}"


def _clock(kernels: list[KernelCard], rows: list[KernelRecord], manifest: Manifest) -> ClockRegime:
    """The clock settings and the clocks seen by the card's kernels (all repeats that read
    them: every launch with --repeat-counters, the counters launch otherwise)."""
    seen: dict[str, list[float]] = {key: [] for key in CLOCKS}
    for values in [k.metrics for k in kernels] + [r.values for r in rows]:
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
