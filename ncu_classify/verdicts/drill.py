"""Drill-down figures of one kernel: the warp-state counters as shares of the CPI, the top
reasons until 90 % of the stall cycles, the deciders, and the class the settle rules
(`data/drill_rules.yaml`) give the mix, with its margin and a one-line finding.

Shares are of the sum of all reasons (which is the CPI, up to the replay-to-replay noise of
the separate passes: 14.5336 against 14.5336 for an 8192^3 GEMM, 13.18 against 13.32 for a TF32
conv), so they add up to 100 %.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

from ..cards.drill import DrillDown, DrillSource, StallShare
from ..cards.hot_units import HotUnit
from ..core.stalls import (
    BANK_CONFLICT_PCT,
    DECIDERS,
    OCCUPANCY_RATIO,
    STALL_GROUPS,
    STALL_REASONS,
    group_key,
)
from ..core.stats import six_figures
from .margins import verdict_margin
from .rules import LoadedRules, evaluate, load_rules

DRILL_RULES = Path(__file__).resolve().parent.parent / "data" / "drill_rules.yaml"
TOP_SHARE = 90.0  # top reasons are listed until they hold this share of the stall cycles


@functools.lru_cache(maxsize=1)
def settle_rules() -> LoadedRules:
    """The packaged settle rules, read once per process."""
    return load_rules(DRILL_RULES)


def drill_values(
    stalls: Mapping[str, float], metrics: Mapping[str, float | None]
) -> dict[str, float | None]:
    """The settle rules' inputs: each reason's and group's share of the stall cycles (%), the
    CPI, the deciders, bank conflicts per shared wavefront (%) and achieved over theoretical
    occupancy."""
    total = sum(stalls.get(reason, 0.0) for reason in STALL_REASONS)
    values: dict[str, float | None] = {"cpi": stalls.get("cpi")}
    for reason in STALL_REASONS:
        raw = stalls.get(reason)
        values[f"stall_{reason}_pct"] = raw / total * 100 if raw is not None and total else None
    for group, members in STALL_GROUPS.items():
        known = [stalls[r] for r in members if r in stalls]
        values[group_key(group)] = sum(known) / total * 100 if known and total else None
    for decider in DECIDERS:
        values[decider.key] = stalls.get(decider.key)
    conflicts, wavefronts = stalls.get("bank_conflicts"), stalls.get("shared_wavefronts")
    values[BANK_CONFLICT_PCT] = (
        conflicts / wavefronts * 100 if conflicts is not None and wavefronts else None
    )
    achieved, possible = metrics.get("warps_active_pct"), metrics.get("max_warps_pct")
    values[OCCUPANCY_RATIO] = achieved / possible if achieved is not None and possible else None
    return values


def build_drill_down(
    stalls: Mapping[str, float],
    metrics: Mapping[str, float | None],
    hot: Mapping[str, list[HotUnit]],
    source: DrillSource,
) -> DrillDown:
    """The drill-down section of a kernel from its warp-state counters (`read` gives them
    as `KernelRow.stalls`) and its card metrics."""
    values = drill_values(stalls, metrics)
    total = sum(stalls.get(reason, 0.0) for reason in STALL_REASONS)
    shares = sorted(
        (
            StallShare(
                reason=reason,
                cycles_per_issue=six_figures(stalls[reason]),
                share_pct=round(stalls[reason] / total * 100, 2),
            )
            for reason in STALL_REASONS
            if reason in stalls and total
        ),
        key=lambda s: (-s.cycles_per_issue, s.reason),
    )
    groups = {g: round(v, 2) for g in STALL_GROUPS if (v := values[group_key(g)]) is not None}
    deciders = {d.key: values[d.key] for d in DECIDERS}
    deciders[BANK_CONFLICT_PCT] = _rounded(values[BANK_CONFLICT_PCT])
    deciders[OCCUPANCY_RATIO] = _rounded(values[OCCUPANCY_RATIO])
    if not shares:
        return DrillDown(cpi=_rounded(stalls.get("cpi")), stalls=[], top_reasons=[], groups={},
                         deciders=deciders, settled=None, finding="no stall cycles recorded",
                         source=source)  # fmt: skip
    rules = settle_rules()
    verdict = evaluate(rules.rules, values)
    return DrillDown(
        cpi=_rounded(stalls.get("cpi")),
        stalls=shares,
        top_reasons=top_reasons(shares),
        groups=groups,
        deciders=deciders,
        settled=verdict.rule.name,
        rule=verdict.rule.text,
        counter_experiment=verdict.rule.counter_experiment,
        finding=finding(verdict.rule.name, shares, values, metrics, hot),
        margin=verdict_margin(rules.rules, verdict.rule.name, values),
        source=source,
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else six_figures(value)


def top_reasons(shares: list[StallShare]) -> list[str]:
    """The largest reasons, in order, until they hold TOP_SHARE % of the stall cycles."""
    out: list[str] = []
    held = 0.0
    for share in shares:
        if held >= TOP_SHARE:
            break
        out.append(share.reason)
        held += share.share_pct
    return out


def finding(
    settled: str,
    shares: list[StallShare],
    values: Mapping[str, float | None],
    metrics: Mapping[str, float | None],
    hot: Mapping[str, list[HotUnit]],
) -> str:
    """The mix in one line: the top three reasons, the CPI, the occupancy, and what the class
    points at (the busiest SM unit for dependency latency, bank conflicts for MIO)."""
    mix = ", ".join(f"{s.reason} {s.share_pct:.0f} %" for s in shares[:3])
    text = f"{mix} of {values['cpi'] or 0:.1f} cycles per issued instruction"
    achieved, possible = metrics.get("warps_active_pct"), metrics.get("max_warps_pct")
    if achieved is not None and possible is not None:
        text += f"; {achieved:.0f} % of warps active ({possible:.0f} % possible)"
    units = hot.get("sm") or []
    if settled == "dependency_latency" and units:
        text += f"; busiest SM unit: {units[0].label} ({units[0].pct:.0f} %)"
    conflicts = values.get(BANK_CONFLICT_PCT)
    if settled == "shared_memory_mio" and conflicts is not None:
        text += f"; bank conflicts {conflicts:.0f} % of shared wavefronts"
    return text
