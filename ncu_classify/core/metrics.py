"""The metric catalog: card metric keys, the ncu names tried for each, and their card units.

ncu names a figure differently depending on how it was collected (`dram__throughput...` under
`--metrics`, `gpu__dram_throughput...` in a `--set full` report), and prints durations and sizes
in whatever unit fits. Every card value is therefore read through an alias list and converted
from the unit the report states into the one fixed unit of its key.
"""

from __future__ import annotations

from dataclasses import dataclass

from .counters import BREAKDOWNS, PRODUCTS, roofline_counters
from .stalls import DRILL_RULE_METRICS, drill_metric_rows
from .units import Dimension, unit_factor


@dataclass(frozen=True)
class MetricSpec:
    """One card metric: its key, the ncu names tried in order, and its unit on the card."""

    key: str
    names: tuple[str, ...]
    dimension: Dimension
    card_unit: str
    per_base: float = 1.0  # card value = base value / per_base
    description: str = ""

    def from_report(self, value: float, unit: str) -> float:
        """Card value of a raw report value in `unit`, to 12 significant digits (no float noise
        such as 303.00800000000004 from ns -> us)."""
        return scaled(value, unit_factor(self.dimension, unit, self.per_base))


def scaled(value: float, factor: float) -> float:
    """`value` x `factor` to 12 significant digits (the reader keeps each report's factors)."""
    return value if factor == 1.0 else float(f"{value * factor:.12g}")


TENSOR_ELAPSED = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
TENSOR_ACTIVE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"

CATALOG: tuple[MetricSpec, ...] = (
    MetricSpec("dur_us", ("gpu__time_duration.sum",), "time", "us", 1e-6, "kernel duration"),
    MetricSpec(
        "sm_pct",
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
        "percent",
        "%",
        description="SM throughput, % of peak over elapsed time (max of SM sub-units)",
    ),
    MetricSpec(
        "tensor_pct",
        (TENSOR_ELAPSED, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"),
        "percent",
        "%",
        description="tensor pipe busy, % of peak over elapsed cycles like sm_pct (counts wgmma"
        " on gh100); from the active figure x sm__cycles_active.avg / sm__cycles_elapsed.avg"
        " where a report has only that",
    ),
    MetricSpec(
        "tensor_active_pct",
        (TENSOR_ACTIVE, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
        "percent",
        "%",
        description="tensor pipe busy, % of peak over the cycles the SMs were active (inflated"
        " where SMs idle: partial waves)",
    ),
    MetricSpec(
        "dram_pct",
        (
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        ),
        "percent",
        "%",
        description="DRAM throughput, % of peak over elapsed time",
    ),
    MetricSpec(
        "l2_pct",
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
        "percent",
        "%",
        description="L2 slice throughput, % of peak over elapsed time",
    ),
    MetricSpec(
        "warps_active_pct",
        ("sm__warps_active.avg.pct_of_peak_sustained_active",),
        "percent",
        "%",
        description="achieved occupancy",
    ),
    MetricSpec(
        "max_warps_pct",
        ("sm__maximum_warps_per_active_cycle_pct",),
        "percent",
        "%",
        description="theoretical occupancy",
    ),
    MetricSpec(
        "waves",
        ("launch__waves_per_multiprocessor",),
        "count",
        "waves",
        description="blocks / (SMs x blocks per SM)",
    ),
    MetricSpec("grid", ("launch__grid_size",), "count", "blocks"),
    MetricSpec("block", ("launch__block_size",), "count", "threads"),
    MetricSpec("regs", ("launch__registers_per_thread",), "count", "registers/thread"),
    MetricSpec(
        "smem_dyn_kb",
        ("launch__shared_mem_per_block_dynamic",),
        "bytes",
        "KB",
        1e3,
        "dynamic shared memory per block (1 KB = 1000 bytes)",
    ),
    MetricSpec(
        "smem_static_b",
        ("launch__shared_mem_per_block_static",),
        "bytes",
        "byte",
        description="static shared memory per block",
    ),
    MetricSpec("l2_hit_pct", ("lts__t_sector_hit_rate.pct",), "percent", "%"),
    MetricSpec(
        "sm_cycles_active",
        ("sm__cycles_active.avg",),
        "count",
        "cycles",
        description="cycles with at least one warp resident, mean over SMs",
    ),
    MetricSpec(
        "sm_cycles_elapsed",
        ("sm__cycles_elapsed.avg",),
        "count",
        "cycles",
        description="elapsed cycles, mean over SMs (the denominator of the elapsed percentages)",
    ),
    MetricSpec(
        "cycles_elapsed",
        ("gpc__cycles_elapsed.max", "sm__cycles_elapsed.max"),
        "count",
        "cycles",
        description="elapsed cycles of the kernel",
    ),
    MetricSpec(
        "dram_read_mb",
        ("dram__bytes_read.sum",),
        "bytes",
        "MB",
        1e6,
        "DRAM bytes read (1 MB = 1e6 bytes)",
    ),
    MetricSpec(
        "dram_write_mb",
        ("dram__bytes_write.sum",),
        "bytes",
        "MB",
        1e6,
        "DRAM bytes written (1 MB = 1e6 bytes)",
    ),
    MetricSpec("occ_limit_regs", ("launch__occupancy_limit_registers",), "count", "blocks/SM"),
    MetricSpec("occ_limit_smem", ("launch__occupancy_limit_shared_mem",), "count", "blocks/SM"),
    MetricSpec(
        "sm_clock_ghz",
        ("sm__cycles_elapsed.avg.per_second",),
        "rate",
        "GHz",
        1e9,
        "SM clock during the kernel: turn per-cycle peaks into per-second ones with it",
    ),
)
CATALOG += tuple(
    MetricSpec(c.key, (c.name, *c.aliases), c.dimension, c.card_unit, c.per_base, c.description)  # type: ignore[arg-type]
    for c in roofline_counters()
)
SPECS = {spec.key: spec for spec in CATALOG}
CATALOG_KEYS = tuple(spec.key for spec in CATALOG)  # a kernel row's values, in catalog order


@dataclass(frozen=True)
class DerivedMetric:
    """A metric computed from two catalog metrics as numerator / denominator."""

    key: str
    numerator: str
    denominator: str
    description: str


DERIVED: tuple[DerivedMetric, ...] = (
    DerivedMetric(
        "sm_active_over_elapsed",
        "sm_cycles_active",
        "cycles_elapsed",
        "share of elapsed cycles in which the average SM had work (tail/launch gaps)",
    ),
)
DERIVED_BY_KEY = {d.key: d for d in DERIVED}
# 1 for a grid of exactly one full wave (blocks = SMs x blocks per SM: the launch of persistent
# schedulers, cuBLAS nvjet, cuDNN xmma and SDPA on the H200 launch 132 CTAs), 0 otherwise: such a
# grid has no tail, whatever the SMs' idle time says.
PERSISTENT = "persistent"
# Launch figures: exact, so they never flip between runs; a verdict near one of their
# thresholds is not borderline (the distance is reported all the same).
EXACT_METRICS = frozenset(
    {"waves", "grid", "block", "regs", "smem_dyn_kb", "smem_static_b", "occ_limit_regs",
     "occ_limit_smem", "max_warps_pct", PERSISTENT}
)  # fmt: skip

# Pairs (smaller, larger) of metrics ordered by definition: sm__throughput is the maximum over
# the SM sub-units of its breakdown, the tensor pipe, instruction issue and the FMA and ALU
# pipes among them, so each is <= sm_pct (none above it in 3,072 kernels of H200, H100 and A100
# cards; l1_pipe_pct, not a sub-unit, is above it in 541). A comparison on one of a pair
# measured without the other may be decided by it: `tensor_pct < t` from sm_pct < t,
# `sm_pct >= t` from issue_pct >= t (a light capture measures issue_pct and tensor_pct, not
# sm_pct).
AT_MOST: tuple[tuple[str, str], ...] = tuple(
    (unit, "sm_pct") for unit in ("tensor_pct", "issue_pct", "fma_pipe_pct", "alu_pipe_pct")
)
# Every metric key a rule may test.
RULE_METRICS = frozenset(SPECS) | frozenset(DERIVED_BY_KEY) | {PERSISTENT} | DRILL_RULE_METRICS
# Legacy evidence block: the figures a verdict rests on.
EVIDENCE_KEYS = (
    "sm_pct",
    "tensor_pct",
    "dram_pct",
    "l2_pct",
    "warps_active_pct",
    "waves",
    "sm_active_over_elapsed",
)
# Report attributes read beside the catalog (not card metrics).
PASSES_METRIC = "profiler__replayer_passes"
DEVICE_METRICS: dict[str, str | tuple[str, ...]] = {
    "name": "device__attribute_display_name",
    "sm_count": "device__attribute_multiprocessor_count",
    "l2_bytes": "device__attribute_l2_cache_size",
    "cc_major": "device__attribute_compute_capability_major",
    "cc_minor": "device__attribute_compute_capability_minor",
    # the clocks that cap the roofline's ceilings, in kHz as the report gives them
    "sm_clock_max_khz": ("device__attribute_max_gpu_frequency_khz", "device__attribute_clock_rate"),
    "dram_clock_max_khz": "device__attribute_memory_clock_rate",
}


def capture_metric_names() -> list[str]:
    """The `--metrics` list capture asks ncu for: the first name of every catalog metric, and
    the two throughput breakdowns (no extra pass: 12 per kernel on the H200)."""
    return [spec.names[0] for spec in CATALOG] + list(BREAKDOWNS.values())


# The light tier of `capture --light-after` (issue 41): counters that cost about one replay pass
# together (measured alone, H100/H200, ncu 2025.3.1: the dram throughput, the two tensor-pipe
# figures, and bytes + cycles + pipes, 0.03 s a kernel against 0.3-0.44 s for the full list),
# plus launch statistics, which cost no pass. It lacks the card figures of the costly ones:
# sm_pct (sm__throughput: 9 passes alone), l2_pct (lts__throughput: 5), the hot units (the
# throughput breakdowns) and the roofline's FLOPs (the SASS and tensor-op counters), so a rule
# that needs them stays unknown on a light kernel. Its own pass count is still to be measured
# on a GPU: reports/speed/probe_pass_cost.py's `light` list is this one.
LIGHT_METRICS: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    TENSOR_ELAPSED,
    TENSOR_ACTIVE,
    "dram__bytes.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "gpc__cycles_elapsed.max",  # the tail rule's elapsed cycles (sm_active_over_elapsed)
    "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    *(spec.names[0] for spec in CATALOG if spec.names[0].startswith("launch__")),
)


def derive(values: dict[str, float | None]) -> dict[str, float | None]:
    """Derived metrics from card values; None where an input is missing or the divisor is 0."""
    out: dict[str, float | None] = {}
    for d in DERIVED:
        num, den = values.get(d.numerator), values.get(d.denominator)
        out[d.key] = num / den if num is not None and den else None
    waves = values.get("waves")
    out[PERSISTENT] = None if waves is None else float(abs(waves - 1.0) < 1e-9)
    return out


def metric_rows() -> list[list[str]]:
    """One row per card metric for `ncu-classify metrics`: key, card unit, the ncu names tried
    in order (then what a `--set full` report gives instead, as a product of its counters), and
    what it means; derived metrics name their inputs."""
    products = {p.key: [p.label] for p in PRODUCTS}  # what a --set full report gives instead
    rows = [
        [spec.key, spec.card_unit, " | ".join([*spec.names, *products.get(spec.key, [])]),
         spec.description]
        for spec in CATALOG
    ]  # fmt: skip
    rows += [
        [d.key, "ratio", f"{d.numerator} / {d.denominator} (derived)", d.description]
        for d in DERIVED
    ]
    rows.append(
        [
            PERSISTENT,
            "0 or 1",
            "launch__waves_per_multiprocessor == 1 (derived)",
            "a grid of exactly one full wave (persistent kernels): never read as a tail",
        ]
    )
    return rows + drill_metric_rows()


def complete(values: dict[str, float | None], sources: dict[str, str]) -> None:
    """Drop peaks of 0 (unknown), and fill what a report lacks but its other counters determine
    exactly, saying how in `sources`: `sm_cycles_elapsed` as sm__cycles_elapsed.avg.per_second
    x gpu__time_duration.sum (that rate is defined as the one over the other), and
    `tensor_pct` (over elapsed cycles) from the active figure x sm__cycles_active.avg /
    sm__cycles_elapsed.avg where a report carries only that (every capture before schema 1.2,
    users' old reports)."""
    for key in [k for k, v in values.items() if k.startswith("peak_") and v == 0]:
        values[key] = None  # a peak of 0 is no peak: ncu writes it for kernels it could not
        sources.pop(key, None)  # profile; dividing by it would make every roof infinite
    clock, duration = values.get("sm_clock_ghz"), values.get("dur_us")
    if values.get("sm_cycles_elapsed") is None and clock and duration:
        values["sm_cycles_elapsed"] = float(f"{clock * duration * 1e3:.12g}")  # GHz x us
        sources["sm_cycles_elapsed"] = ELAPSED_FROM_RATE
    active, busy = values.get("tensor_active_pct"), values.get("sm_cycles_active")
    elapsed = values.get("sm_cycles_elapsed")
    if values.get("tensor_pct") is not None or active is None or busy is None or not elapsed:
        return
    values["tensor_pct"] = float(f"{active * busy / elapsed:.12g}")
    denominator = sources.get("sm_cycles_elapsed", "sm__cycles_elapsed.avg")
    if denominator == ELAPSED_FROM_RATE:
        denominator = f"({denominator})"
    sources["tensor_pct"] = (
        f"{sources.get('tensor_active_pct', TENSOR_ACTIVE)} x sm__cycles_active.avg / {denominator}"
    )


ELAPSED_FROM_RATE = "sm__cycles_elapsed.avg.per_second x gpu__time_duration.sum"
