"""Compare two cards files shape by shape: which verdicts flipped and why, which kernels changed,
how time moved, per stage and class, and the headroom left; noise is named so.

Both sides are judged under one rules file when the user asks (`--reclassify`); otherwise the
rules the sides were classified under must be the same file for a changed verdict to be pinned
on a threshold, and a warning says when they are not. Percentages are each side's own (of its
GPU's peaks); a missing metric stays missing (None), never a change to or from 0.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .._version import __version__
from ..cards.model import UNRESOLVED, Card, CardFile
from ..cards.rollup import SummaryRow, by_stage, named_dominant
from ..core.clock import utc_now
from ..core.noise import Noise
from ..core.ordering import natural_key, stage_order
from ..core.stats import six_figures
from ..verdicts.judge import kernel_values, reclassify
from ..verdicts.rules import LoadedRules
from .crossings import crossings
from .headroom_diff import headroom_changes
from .intervals import stable_flip, time_test, tolerance_speed, verdicts_measured
from .matching import CardPair, by_stage_order, compared_stage, pair_files, same_kernel, shortfall
from .model import (
    SHOWN_METRICS,
    Change,
    Crossing,
    DiffFile,
    NoiseSeen,
    ShapeDiff,
    SideFigures,
    StageRollup,
)
from .sides import counted_apart, gpu_warnings, marked_apart, shared_rules, side_header

DELTA_METRICS = ("dur_us", *SHOWN_METRICS)


@dataclass(frozen=True)
class DiffOptions:
    """How to compare: one rules file to judge both sides again (or None), the rules files
    the sides may name (`sides.readable_rules`: to name the thresholds a flip crossed), noise,
    stages kept."""

    noise: Noise
    rules: LoadedRules | None = None
    known_rules: tuple[LoadedRules, ...] = ()
    stages: frozenset[str] = field(default_factory=frozenset)


def diff_cards(
    baseline: CardFile,
    candidate: CardFile,
    paths: tuple[str, str],
    options: DiffOptions,
    *,
    at: str | None = None,
) -> DiffFile:
    """The comparison of `candidate` against `baseline` (read from `paths`)."""
    now = at or utc_now()
    warnings: list[str] = []
    rules = options.rules
    if rules is not None:
        baseline = reclassify(baseline, rules, at=now)
        candidate = reclassify(candidate, rules, at=now)
    else:
        rules = shared_rules(baseline, candidate, options.known_rules, warnings)
    kept = [_kept(side.cards, options.stages) for side in (baseline, candidate)]
    pairing = pair_files(*kept)
    pairs = by_stage_order(pairing.pairs, pairing.stages)
    headers = (side_header(baseline, paths[0], kept[0]), side_header(candidate, paths[1], kept[1]))
    warnings += gpu_warnings(*headers) + pairing.notes + shortfall(pairs)
    shapes = [
        _shape_diff(pair, compared_stage(pair, pairing.stages), rules, options.noise)
        for pair in pairs
    ]
    shapes, said = marked_apart(baseline, candidate, shapes, pairs)
    warnings += said
    staged, counted = counted_apart(shapes, pairs, kept)  # (below a target: one side only)
    counts: dict[str, int] = {}
    for shape in shapes:
        counts[shape.change] = counts.get(shape.change, 0) + 1
    return DiffFile(
        generated_at=now,
        tool_version=__version__,
        baseline=headers[0],
        candidate=headers[1],
        rules=rules.rules.id if rules else None,
        noise=options.noise.id,
        stages=sorted(options.stages, key=natural_key),
        warnings=warnings,
        counts=dict(sorted(counts.items())),
        shapes=shapes,
        rollup=_rollup([pair for _, pair in staged], pairing.stages),
        noise_seen=_noise_seen(shapes),
        headroom=headroom_changes(counted[0], counted[1], staged, pairing.stages),
    )


def _kept(cards: list[Card], stages: frozenset[str]) -> list[Card]:
    return [c for c in cards if not stages or c.stage in stages]


def _shape_diff(pair: CardPair, stage: str, rules: LoadedRules | None, noise: Noise) -> ShapeDiff:
    base, cand = pair.baseline, pair.candidate
    card = base or cand
    assert card is not None
    sides = [_figures(c) if c else None for c in (base, cand)]
    if base is None or cand is None:
        change: Change = "repeat" if pair.repeat else ("added" if base is None else "removed")
        return ShapeDiff(
            stage=stage, op=card.op, change=change, matched_by=None, kernel_changed=None,
            duration_ratio=None, speed=None, why=None, baseline=sides[0], candidate=sides[1],
        )  # fmt: skip
    values = (_values(base), _values(cand))
    crossed = []
    if rules and values[0] is not None and values[1] is not None:
        crossed = crossings(rules.rules, values[0], values[1], noise)
    kernel_changed = None
    if base.dominant_kernel and cand.dominant_kernel:
        kernel_changed = not same_kernel(base.dominant_kernel, cand.dominant_kernel)
    change = _change(base, cand, crossed, sides, bool(kernel_changed))
    if change == "flipped" and verdicts_measured(base, cand) and not kernel_changed:
        change = "flipped" if stable_flip(base, cand) else "within_noise"
    test = time_test(base, cand, noise)
    if test is not None:  # the means of the repeats, as the test judged them
        ratio = _ratio(test.baseline.center, test.candidate.center)
    else:
        ratio = _ratio(base.summed_kernel_us, cand.summed_kernel_us)
    return ShapeDiff(
        stage=stage,
        op=card.op,
        change=change,
        matched_by=pair.matched_by,
        kernel_changed=kernel_changed,
        duration_ratio=ratio,
        speed=test.speed if test else tolerance_speed(ratio, noise),
        judged_by="intervals" if test else "noise_file",
        duration_intervals_us=test.rounded() if test else None,
        crossings=crossed if change in ("flipped", "within_noise", "missing_metric") else [],
        why=_why(change, sides[0], sides[1], crossed if change != "same" else [], kernel_changed),
        baseline=sides[0],
        candidate=sides[1],
        metric_deltas={k: _delta(values[0], values[1], k) for k in DELTA_METRICS},
    )


def _change(
    base: Card, cand: Card, crossed: list[Crossing], sides: list[SideFigures | None], kernel: bool
) -> Change:
    """same; flipped; within_noise (every threshold crossed by less than noise, same kernel);
    missing_metric (the deciding rule needs a metric one side lacks); unclassified (a side
    without a class)."""
    before, after = _verdict_key(base), _verdict_key(cand)
    if before is None or after is None:
        same = before is None and after is None and base.status == cand.status
        return "same" if same else "unclassified"
    if before == after:
        return _settled_change(base, cand, kernel)
    if crossed:
        if any(c.within_noise is None for c in crossed) and not any(
            c.within_noise is False for c in crossed
        ):
            return "missing_metric"
        small = all(c.within_noise for c in crossed)
        return "within_noise" if small and not kernel else "flipped"
    borderline = any(s is not None and s.borderline for s in sides)
    return "within_noise" if borderline and not kernel else "flipped"


def _settled_change(base: Card, cand: Card, kernel: bool) -> Change:
    """Same first verdict: a flip if both were settled apart (noise if either is borderline)."""
    one, other = base.settled, cand.settled
    if one is None or other is None or one.primary == other.primary:
        return "same"
    return "within_noise" if (one.borderline or other.borderline) and not kernel else "flipped"


def _verdict_key(card: Card) -> str | None:
    """The card's class; an unresolved card without one (legacy cards leave primary empty)
    is the unresolved class."""
    if card.primary is None and card.status == "unresolved":
        return UNRESOLVED
    return card.primary


def _values(card: Card) -> dict[str, float | None] | None:
    top = named_dominant(card)
    return kernel_values(top.metrics, top.evidence) if top else None


def _figures(card: Card) -> SideFigures:
    top = named_dominant(card)
    values = _values(card) or {}
    roof = top.roofline if top else None
    margin = top.margin if top else None
    units = top.hot_units.get("sm") if top else None
    hot = units[0] if units else None
    return SideFigures(
        group=card.group,
        primary=card.primary,
        status=card.status,
        dominant_kernel=card.dominant_kernel,
        summed_kernel_us=card.summed_kernel_us,
        dominant_us=values.get("dur_us"),
        deciding_metric=margin.metric if margin else None,
        deciding_distance=margin.distance if margin else None,
        borderline=bool(margin and margin.borderline),
        metrics={k: _r_or_none(values.get(k)) for k in SHOWN_METRICS},
        pct_of_roof=roof.pct_of_roof if roof else None,
        achieved_tflops=roof.achieved_tflops if roof else None,
        intensity_dram=roof.intensity.get("dram") if roof else None,
        binding=roof.binding if roof else None,
        hot_unit=f"{hot.label} {hot.pct:.1f}%" if hot else None,
        mfu_pct=card.roofline.mfu_pct if card.roofline else None,
        settled=card.settled.primary if card.settled else None,
    )


def _why(
    change: Change,
    base: SideFigures | None,
    cand: SideFigures | None,
    crossed: list[Crossing],
    kernel_changed: bool | None,
) -> str | None:
    """One sentence on what changed: classes, the thresholds crossed, the kernel."""
    assert base is not None and cand is not None
    parts: list[str] = []
    if change in ("flipped", "within_noise", "missing_metric", "unclassified"):
        parts.append(f"{base.primary or base.status} -> {cand.primary or cand.status}")
    if base.settled != cand.settled and base.settled and cand.settled:
        parts.append(f"settled {base.settled} -> {cand.settled} (drill-down)")
    for c in crossed:
        noise = " (within noise)" if c.within_noise else ""
        parts.append(
            f"{c.metric} {_num(c.baseline)} -> {_num(c.candidate)} against {c.op} {c.threshold:g}"
            f" of {c.rule}{noise}"
        )
    if change in ("flipped", "within_noise") and not crossed:
        parts.append("thresholds unknown (rules differ or cannot be loaded)")
    if kernel_changed:
        parts.append(f"dominant kernel {base.dominant_kernel} -> {cand.dominant_kernel}")
    return "; ".join(parts) or None


def _num(value: float | None) -> str:
    return "missing" if value is None else f"{value:.4g}"


def _ratio(before: float | None, after: float | None) -> float | None:
    """after / before; None when either is missing or 0 (a card with no time has no ratio)."""
    if before is None or after is None or before <= 0 or after <= 0:
        return None
    return six_figures(after / before)


def _delta(
    before: dict[str, float | None] | None, after: dict[str, float | None] | None, key: str
) -> float | None:
    a, b = (before or {}).get(key), (after or {}).get(key)
    return None if a is None or b is None else six_figures(b - a)


def _rollup(pairs: list[CardPair], aliases: dict[str, str]) -> list[StageRollup]:
    """Cards and kernel time per inference per (stage, class) on each side, as `summary`
    computes them for each file (`cards.rollup.by_stage`: time x calls, untimed cards counted
    apart; a shape listed twice counts twice, as the file lists it), so the totals of a diff
    and of the summaries of its two files agree. Stages in comparison order (a loose
    candidate stage under the baseline stage it was compared with)."""
    sides = [
        [p.baseline for p in pairs if p.baseline],
        [_restaged(p.candidate, compared_stage(p, aliases)) for p in pairs if p.candidate],
    ]
    cells: dict[tuple[str, str], list[SummaryRow | None]] = {}
    for index, cards in enumerate(sides):
        for row in by_stage(cards):
            cells.setdefault((row.stage, row.primary), [None, None])[index] = row
    order = {
        stage: i for i, stage in enumerate(stage_order(compared_stage(p, aliases) for p in pairs))
    }

    def most_time(item: tuple[tuple[str, str], list[SummaryRow | None]]) -> tuple[int, float, str]:
        (stage, primary), rows = item
        return order[stage], -max((row.kernel_us or 0.0) if row else 0.0 for row in rows), primary

    staged = [{card.stage for card in cards} for cards in sides]
    return [
        _rollup_row(stage, primary, rows, [stage in have for have in staged])
        for (stage, primary), rows in sorted(cells.items(), key=most_time)
    ]


def _restaged(card: Card, stage: str) -> Card:
    """A candidate card under the stage its pair is compared in (the baseline's, or the
    baseline stage its loose stage was compared with)."""
    return card if card.stage == stage else card.model_copy(update={"stage": stage})


def _rollup_row(
    stage: str, primary: str, rows: list[SummaryRow | None], present: list[bool]
) -> StageRollup:
    """One roll-up cell from the summary rows of both sides; a side with cards in the stage
    but none of the class has 0 us there (None: no card of the stage, or no card of the cell
    timed); no change without both totals whole (an untimed card on either side)."""
    (base, cand), (one, other) = rows, present
    before = base.kernel_us if base else 0.0 if one else None
    after = cand.kernel_us if cand else 0.0 if other else None
    untimed = [row.untimed if row else 0 for row in (base, cand)]
    whole = before is not None and after is not None and not any(untimed)
    return StageRollup(
        stage=stage,
        primary=primary,
        baseline_cards=base.cards if base else 0,
        candidate_cards=cand.cards if cand else 0,
        baseline_us=before,
        candidate_us=after,
        baseline_untimed=untimed[0],
        candidate_untimed=untimed[1],
        delta_us=six_figures(after - before) if whole else None,  # type: ignore[operator]
    )


def _noise_seen(shapes: list[ShapeDiff]) -> list[NoiseSeen]:
    """|change| per metric over shapes on both sides with the same dominant kernel (the noise,
    when the sides are repeat captures); duration as % change of summed kernel time."""
    same = [s for s in shapes if s.kernel_changed is False]
    seen: dict[str, list[float]] = {"duration_pct": []}
    for shape in same:
        if shape.duration_ratio is not None:
            seen["duration_pct"].append(abs(shape.duration_ratio - 1) * 100)
        for key in SHOWN_METRICS:
            value = shape.metric_deltas.get(key)
            if value is not None:
                seen.setdefault(key, []).append(abs(value))
    return [
        NoiseSeen(metric=key, shapes=len(values), median=six_figures(statistics.median(values)),
                  p90=six_figures(sorted(values)[int(0.9 * (len(values) - 1))]),
                  max=six_figures(max(values)))
        for key, values in seen.items()
        if values
    ]  # fmt: skip


def _r_or_none(value: float | None) -> float | None:
    return None if value is None else six_figures(value)
