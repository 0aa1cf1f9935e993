"""The roofline counters: executed FLOPs per instruction family and input type, CUDA-core FP32
instructions, bytes at DRAM, L2 and L1, each with its `.peak_sustained` per cycle, and the clocks
that turn per-cycle peaks into per-second ones.

Names and pass costs were read on the H200 with ncu 2025.3.1 (`reports/roofline/`): adding all
of them to the card metrics costs 12 replay passes per kernel instead of 9; the two throughput
breakdowns cost no extra pass. Peaks come from the report itself (ncu's own roofline uses the
same `<counter>.sum.peak_sustained x <unit clock>`), so the same code is right on any GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# (family, input type) -> the ncu counter of dense tensor FLOPs it executed. hgmma is Hopper's
# wgmma, hmma the mma.sync path (PyTorch's flash kernel, sm80 cuDNN kernels), at 2/3 the rate.
TENSOR_FAMILIES: dict[tuple[str, str], str] = {
    ("hgmma", "bf16"): "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off",
    ("hgmma", "fp16"): "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off",
    ("hgmma", "tf32"): "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off",
    ("hmma", "bf16"): "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off",
    ("hmma", "fp16"): "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off",
    ("hmma", "fp16acc"): "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16_sparsity_off",
    ("hmma", "tf32"): "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32_sparsity_off",
}
FP32_OPS = {  # CUDA-core FP32 thread instructions; an FMA is 2 FLOPs
    "ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on",
    "fadd": "smsp__sass_thread_inst_executed_op_fadd_pred_on",
    "fmul": "smsp__sass_thread_inst_executed_op_fmul_pred_on",
}
MEMORY_LEVELS = {  # level -> (bytes counter, the unit's clock)
    "dram": ("dram__bytes", "dram__cycles_elapsed.avg.per_second"),
    "l2": ("lts__t_bytes", "lts__cycles_elapsed.avg.per_second"),
    "l1": ("l1tex__t_bytes", "l1tex__cycles_elapsed.avg.per_second"),
}
UNIT_LOADS = {  # single sub-units the refined rules name, % of peak over elapsed cycles
    "issue_pct": ("sm__issue_active", "instruction issue"),
    "fma_pipe_pct": ("sm__pipe_fma_cycles_active", "FMA pipe (FP32)"),
    "alu_pipe_pct": ("sm__pipe_alu_cycles_active", "ALU pipe (integer, logic)"),
    "l1_pipe_pct": ("l1tex__data_pipe_lsu_wavefronts", "L1/shared data pipe"),
}
BREAKDOWNS = {  # the two throughput breakdowns: each names its sub-metrics, read with them
    "sm": "breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory": "breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
}


@dataclass(frozen=True)
class Counter:
    """One roofline counter as a card metric: key, ncu name, dimension, card unit, scale."""

    key: str
    name: str
    dimension: str
    card_unit: str
    per_base: float
    description: str
    aliases: tuple[str, ...] = ()  # other names of the same figure (a --set full report)


def roofline_counters() -> list[Counter]:
    """Every roofline counter, in card order."""
    out: list[Counter] = []
    for (family, kind), name in TENSOR_FAMILIES.items():
        what = f"{family} {kind}"
        out += [
            Counter(f"flops_{family}_{kind}", f"{name}.sum", "count", "FLOP", 1.0,
                    f"dense tensor FLOPs executed by {what} (tile padding included)"),
            Counter(f"peak_{family}_{kind}", f"{name}.sum.peak_sustained", "count",
                    "FLOP/cycle", 1.0, f"{what} peak FLOP per SM cycle, whole GPU"),
        ]  # fmt: skip
    for op, name in FP32_OPS.items():
        out.append(
            Counter(f"inst_{op}", f"{name}.sum", "count", "inst", 1.0, f"FP32 {op} instructions")
        )
    ffma = f"{FP32_OPS['ffma']}.sum.peak_sustained"
    full = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"  # --set full
    out.append(
        Counter("peak_ffma", ffma, "count", "inst/cycle", 1.0, "FFMA peak per SM cycle", (full,))
    )
    for key, (name, what) in UNIT_LOADS.items():
        out.append(
            Counter(key, f"{name}.avg.pct_of_peak_sustained_elapsed", "percent", "%", 1.0,
                    f"{what} busy, % of peak over elapsed cycles")
        )  # fmt: skip
    for level, (name, clock) in MEMORY_LEVELS.items():
        unit = level.upper()
        out += [
            Counter(f"{level}_bytes", f"{name}.sum", "bytes", "byte", 1.0, f"bytes at {unit}"),
            Counter(f"peak_{level}_bytes", f"{name}.sum.peak_sustained", "count",
                    "byte/cycle", 1.0, f"{unit} peak bytes per {unit} cycle"),
            Counter(f"{level}_clock_ghz", clock, "rate", "GHz", 1e9, f"{unit} clock"),
        ]  # fmt: skip
    return out


SECTOR_BYTES = 32  # an L2 sector; ncu defines lts__t_bytes as lts__t_sectors x 32
LTS_SLICES = "lts__cycles_elapsed.sum / lts__cycles_elapsed.avg"  # LTS instances (slices)


@dataclass(frozen=True)
class Product:
    """A card figure that a `--set full` report holds only under other counters: `scale` x the
    product of `factors` / the product of `divisors`, written as `label` in metric_sources."""

    key: str
    factors: tuple[str, ...]
    divisors: tuple[str, ...]
    scale: float
    label: str


# What a `--set full` report (ncu 2025.3.1, H200) carries for the figures it lacks by name.
# It has no l1tex__t_bytes.sum, no l1tex__t_sectors.sum and no L1 tag-stage peak: only sectors
# split by pipe, memory space and operation, with no total, so l1_bytes and peak_l1_bytes stay
# missing (derived__l1tex__lsu_writeback_bytes is LSU writeback, another figure).
PRODUCTS = (
    Product("l2_bytes", ("lts__t_sectors.sum",), (), SECTOR_BYTES, "lts__t_sectors.sum x 32"),
    Product(
        "peak_l2_bytes",
        ("lts__t_sectors.avg.peak_sustained", "lts__cycles_elapsed.sum"),
        ("lts__cycles_elapsed.avg",),
        SECTOR_BYTES,
        f"lts__t_sectors.avg.peak_sustained x 32 x {LTS_SLICES}",
    ),
)


def fill_products(
    lookup: Callable[[str], float | None],
    values: dict[str, float | None],
    sources: dict[str, str],
) -> None:
    """Fill each figure of PRODUCTS that `values` lacks from the counters `lookup` gives (base
    units, None when absent), to 12 significant digits; a zero divisor leaves it missing."""
    for product in PRODUCTS:
        if values.get(product.key) is not None:
            continue
        factors = [lookup(name) for name in product.factors]
        divisors = [lookup(name) for name in product.divisors]
        if None in factors or None in divisors or 0 in divisors:
            continue
        value = product.scale
        for factor in factors:
            value *= factor  # type: ignore[operator]
        for divisor in divisors:
            value /= divisor  # type: ignore[operator]
        values[product.key] = float(f"{value:.12g}")
        sources[product.key] = product.label
