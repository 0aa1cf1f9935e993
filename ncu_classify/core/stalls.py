"""The drill-down catalog: warp-state counters (where a warp's cycles go between two issued
instructions) and the counters that decide between the classes they point to.

Every stall reason `r` is `smsp__average_warps_issue_stalled_<r>_per_issue_active.ratio`: warps
stalled on `r` per cycle with an issue, so the reasons sum to the warp's cycles per issued
instruction (CPI, `smsp__average_warp_latency_per_inst_issued.ratio`; an 8192^3 GEMM on the H200:
the 19 reasons sum to 14.5336, its CPI 14.5336). A `--set full` report holds them all (its
WarpStateStats section); a capture asks for them by name only when drilling down (19 replay
passes instead of 12 on the H200, ncu 2025.3.1). Names were read from H200 reports.
"""

from __future__ import annotations

from dataclasses import dataclass

CPI_METRIC = "smsp__average_warp_latency_per_inst_issued.ratio"
STALL_REASONS = (
    "barrier",
    "branch_resolving",
    "dispatch_stall",
    "drain",
    "gmma",
    "imc_miss",
    "lg_throttle",
    "long_scoreboard",
    "math_pipe_throttle",
    "membar",
    "mio_throttle",
    "misc",
    "no_instruction",
    "not_selected",
    "selected",
    "short_scoreboard",
    "sleeping",
    "tex_throttle",
    "wait",
)


def stall_metric(reason: str) -> str:
    """The ncu name of a stall reason's warps per issue-active cycle."""
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


# Reasons grouped by what they tell (shares of CPI add up within a group); the settle rules
# (rules/drill.yaml) test these. Every reason is in exactly one group.
STALL_GROUPS: dict[str, tuple[str, ...]] = {
    "memory_latency": ("long_scoreboard",),
    "memory_queue": ("lg_throttle", "tex_throttle", "drain"),
    "dependency": ("wait", "selected", "math_pipe_throttle", "dispatch_stall"),
    "tensor_wait": ("gmma",),
    "sync": ("barrier", "membar", "sleeping"),
    "shared_mio": ("mio_throttle", "short_scoreboard"),
    "fetch": ("no_instruction", "branch_resolving", "imc_miss"),
    "issue_contention": ("not_selected",),
    "other": ("misc",),
}
GROUP_OF = {reason: group for group, members in STALL_GROUPS.items() for reason in members}


@dataclass(frozen=True)
class Decider:
    """A drill-down counter beside the stalls: its key, ncu name, and what it tells."""

    key: str
    name: str
    description: str


DECIDERS = (
    Decider(
        "bank_conflicts",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        "shared-memory bank conflicts (extra wavefronts)",
    ),
    Decider(
        "shared_wavefronts",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        "shared-memory wavefronts (the conflicts' denominator)",
    ),
    Decider("l1_hit_pct", "l1tex__t_sector_hit_rate.pct", "L1 sector hit rate, %"),
    Decider(
        "lsu_pipe_pct",
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
        "LSU pipe (loads, stores, shared memory) instructions, % of peak over active cycles",
    ),
    Decider(
        "issue_active_pct",
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "cycles with an instruction issued, % of active cycles (per scheduler)",
    ),
    Decider(
        "eligible_warps",
        "smsp__warps_eligible.avg.per_cycle_active",
        "warps ready to issue per active cycle, per scheduler",
    ),
)


def drill_metric_names() -> list[str]:
    """The counters a drill-down capture asks for beside the card metrics: CPI, every stall
    reason and the deciders."""
    return [CPI_METRIC, *map(stall_metric, STALL_REASONS), *(d.name for d in DECIDERS)]


def group_key(group: str) -> str:
    """The rule metric of a group's share of the CPI, %."""
    return f"stall_{group}_pct"


BANK_CONFLICT_PCT = "bank_conflict_pct"  # conflicts per shared wavefront, %
OCCUPANCY_RATIO = "occupancy_ratio"  # achieved over theoretical occupancy
# Every figure a settle rule may test (rules/drill.yaml): group and reason shares, the CPI, the
# deciders and two ratios of them.
DRILL_RULE_METRICS = frozenset(
    {group_key(g) for g in STALL_GROUPS}
    | {f"stall_{r}_pct" for r in STALL_REASONS}
    | {"cpi", BANK_CONFLICT_PCT, OCCUPANCY_RATIO}
    | {d.key for d in DECIDERS}
)


def drill_metric_rows() -> list[list[str]]:
    """Rows of `ncu-classify metrics` for what the settle rules test: shares of the stall
    cycles (%) per group and per reason, the CPI, and the deciders."""
    rows = [
        [group_key(g), "%", " + ".join(map(stall_metric, members)) + " (share)",
         f"share of the stall cycles: {', '.join(members)}"]
        for g, members in STALL_GROUPS.items()
    ]  # fmt: skip
    rows += [
        [f"stall_{r}_pct", "%", f"{stall_metric(r)} (share)", f"share of the stall cycles: {r}"]
        for r in STALL_REASONS
    ]
    rows.append(["cpi", "cycles", CPI_METRIC, "warp cycles per issued instruction"])
    rows += [
        [d.key, "%" if d.key.endswith("_pct") else "count", d.name, d.description] for d in DECIDERS
    ]
    rows.append([BANK_CONFLICT_PCT, "%", "bank_conflicts / shared_wavefronts (derived)",
                 "shared-memory bank conflicts per shared wavefront"])  # fmt: skip
    rows.append([OCCUPANCY_RATIO, "ratio", "warps_active_pct / max_warps_pct (derived)",
                 "achieved over theoretical occupancy"])  # fmt: skip
    return rows
