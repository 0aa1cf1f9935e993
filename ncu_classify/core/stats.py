"""Figures measured several times: mean, median, a Student-t 95 % interval of the mean, the
relative standard deviation, min, max and n, and whether the figure is stable.

The interval is Student's t, not mean +- 1.96 sd / sqrt(n): at n = 5 the normal one is 29 %
too narrow (t = 2.776). A figure is `stable` when its RSD is below STABLE_RSD_PCT (2 %, the
threshold nsight-python uses). One value has no spread: its interval, sd, RSD and stability are
None, never 0."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

STABLE_RSD_PCT = 2.0
# Two-sided 95 % quantiles of Student's t by degrees of freedom; between two rows the smaller
# df is used (a wider interval, never a narrower one).
T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
    17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064,
    25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000,
    120: 1.980,
}  # fmt: skip


class Spread(BaseModel):
    """One figure measured n times."""

    model_config = ConfigDict(extra="forbid")
    n: int = Field(ge=1)
    mean: float
    median: float
    ci95_low: float | None = Field(description="Student-t 95 % interval of the mean (n >= 2)")
    ci95_high: float | None
    sd: float | None = Field(description="sample standard deviation (n >= 2)")
    rsd_pct: float | None = Field(description="sd / mean, in % (n >= 2, mean not 0)")
    min: float
    max: float
    stable: bool | None = Field(description=f"RSD below {STABLE_RSD_PCT:g} % (n >= 2)")

    def half_width(self) -> float | None:
        """Half the interval's width; None without one."""
        if self.ci95_low is None or self.ci95_high is None:
            return None
        return (self.ci95_high - self.ci95_low) / 2


def t95(df: int) -> float:
    """The two-sided 95 % quantile of Student's t with `df` degrees of freedom."""
    if df < 1:
        raise ValueError("Student's t needs at least one degree of freedom")
    return T95[max(k for k in T95 if k <= df)] if df <= 120 else 1.960


def spread(values: Sequence[float]) -> Spread:
    """The Spread of `values` (at least one), rounded to 6 significant digits."""
    if not values:
        raise ValueError("a spread needs at least one value")
    n, mean = len(values), statistics.fmean(values)
    sd = statistics.stdev(values) if n > 1 else None
    half = t95(n - 1) * sd / math.sqrt(n) if sd is not None else None
    rsd = 100 * sd / abs(mean) if sd is not None and mean else None
    return Spread(
        n=n,
        mean=six_figures(mean),
        median=six_figures(statistics.median(values)),
        ci95_low=six_figures(mean - half) if half is not None else None,
        ci95_high=six_figures(mean + half) if half is not None else None,
        sd=six_figures(sd) if sd is not None else None,
        rsd_pct=six_figures(rsd) if rsd is not None else None,
        min=six_figures(min(values)),
        max=six_figures(max(values)),
        stable=rsd < STABLE_RSD_PCT if rsd is not None else None,
    )


def six_figures(value: float) -> float:
    """`value` rounded to six significant figures: the one rounding every published figure gets,
    so that cards, diffs and summaries stay byte-identical across platforms."""
    return float(f"{value:.6g}")
