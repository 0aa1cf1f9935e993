"""The hot units of a kernel: the busiest members of the SM and memory throughput breakdowns,
read from an ncu_report action (the reader hands the action; this module imports nothing of
ncu_report)."""

from __future__ import annotations

import functools
import math
from typing import Any

from ..core.counters import BREAKDOWNS

HOT_UNITS = 3  # entries of each breakdown kept on the card
_BREAKDOWN_SUFFIX = ".avg.pct_of_peak_sustained_elapsed"


def hot_units(action: Any) -> dict[str, list[tuple[str, float]]]:
    """The top sub-units of the SM and memory throughput breakdowns, busiest first: the
    breakdown metric's value names its members, whose values the report holds beside it."""
    out = {}
    lookup = action.metric_by_name
    for unit, name in BREAKDOWNS.items():
        metric = lookup(name)
        if metric is None or not metric.has_value():
            continue
        ranked = []  # (-value, member): sorted, busiest first, a tie by name
        for member, short in _members(metric.as_string()):  # its value lists the members
            value = lookup(member)
            number = value.as_double() if value is not None and value.has_value() else math.nan
            if math.isfinite(number):
                ranked.append((-number, short))
        ranked.sort()
        out[unit] = [(short, float(f"{-negated:.6g}")) for negated, short in ranked[:HOT_UNITS]]
    return out


@functools.lru_cache(maxsize=64)
def _members(listing: str) -> tuple[tuple[str, str], ...]:
    """(metric, unit) of each member a breakdown lists (one text for a report's kernels)."""
    names = [member.strip() for member in listing.split(",")]
    return tuple((name, name.removesuffix(_BREAKDOWN_SUFFIX)) for name in names)
