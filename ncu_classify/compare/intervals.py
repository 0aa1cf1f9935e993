"""Comparing two repeated captures by their intervals (both cards measured with --repeat).

A shape's summed kernel time on each side is the mean of its repeats with its Student-t 95 %
interval, widened by the noise file's run-to-run sd (what repeats inside one capture cannot
see: a GEMM's mean moved 0.5 % between two captures whose own intervals were +-0.1 %). The
documented test:

- slower / faster: the two widened intervals do not overlap;
- within noise: they overlap, and the 95 % interval of the change (the log ratio of the means,
  +- the two relative half-widths in quadrature) stays within the noise file's `duration_pct`;
- inconclusive: they overlap but that interval reaches beyond it (too noisy to rule one out).

Swapping the sides swaps slower and faster and changes nothing else.

A verdict that differs between the sides is a flip beyond noise only when both sides' verdicts
are stable (no value inside the run-to-run intervals of the deciding and rival metrics changes
them); otherwise the flip is within noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..cards.model import Card
from ..core.noise import Noise
from ..core.stats import six_figures
from ..verdicts.repeats import Interval, metric_interval
from .model import Speed


@dataclass(frozen=True)
class TimeTest:
    """The interval test of one shape's time: the verdict and both widened intervals."""

    speed: Speed
    baseline: Interval
    candidate: Interval

    def rounded(self) -> list[list[float]]:
        """Both sides' intervals, baseline first, to 6 significant digits."""
        return [[six_figures(e) for e in side.ends()] for side in (self.baseline, self.candidate)]


def time_interval(card: Card, noise: Noise) -> Interval | None:
    """The card's summed kernel time as a run-to-run interval; None unless it was repeated."""
    measured = card.measurement.summed_kernel_us if card.measurement else None
    if measured is None or measured.n < 2:
        return None
    return metric_interval("dur_us", measured.mean, measured, noise.run_to_run)


def time_test(base: Card, cand: Card, noise: Noise) -> TimeTest | None:
    """The interval test of a shape's time; None when a side has no interval (the noise file's
    tolerance decides then). Symmetric: swapping the sides swaps slower and faster only."""
    one, other = time_interval(base, noise), time_interval(cand, noise)
    if one is None or other is None or min(one.ends()[0], other.ends()[0]) <= 0:
        return None
    (lo_b, hi_b), (lo_c, hi_c) = one.ends(), other.ends()
    change = math.log(other.center / one.center)
    spread = math.hypot(one.half / one.center, other.half / other.center)
    largest = 100 * (math.exp(abs(change) + spread) - 1)
    speed: Speed
    if hi_c < lo_b:
        speed = "faster"
    elif lo_c > hi_b:
        speed = "slower"
    else:
        speed = "within_noise" if largest <= noise.duration_pct else "inconclusive"
    return TimeTest(speed, one, other)


def verdicts_measured(base: Card, cand: Card) -> bool:
    """Whether both sides say how stable their verdicts are."""
    return all(
        c.measurement is not None and c.measurement.stability is not None for c in (base, cand)
    )


def stable_flip(base: Card, cand: Card) -> bool:
    """A flip beyond noise: both verdicts are stable over their run-to-run intervals."""
    return all(
        c.measurement is not None
        and c.measurement.stability is not None
        and c.measurement.stability.verdict == "stable"
        for c in (base, cand)
    )


def tolerance_speed(ratio: float | None, noise: Noise) -> Speed | None:
    """The noise file's test of a time ratio (a side measured once): beyond its
    `duration_pct` either way (a ratio, so x1.08 slower and x1/1.08 faster alike), or within
    noise."""
    if ratio is None:
        return None
    tolerance = 1 + noise.duration_pct / 100
    if ratio > tolerance:
        return "slower"
    return "faster" if ratio * tolerance < 1 else "within_noise"
