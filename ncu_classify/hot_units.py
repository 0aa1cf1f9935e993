"""The hot unit, named: the busiest entries of ncu's SM and memory throughput breakdowns.

`sm__throughput` is the maximum over many SM sub-units, so "compute-bound" alone does not say
whether a math pipe or instruction issue is busy: a depthwise fp32 conv3d reads 78 % SM
throughput from `sm__issue_active` while doing 2.7 TFLOP/s, 4 % of the FP32 roof. Each entry gets
a label and a kind (math, issue, memory, other); a compute-bound verdict whose busiest SM unit is
not a math pipe says so on the kernel.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from .roofline import Roofline

# ncu counter (without `.avg.pct_of_peak_sustained_elapsed`) -> (label, kind); the rest keep
# their counter name and kind "other" (or "memory" for dram/lts/l1tex/fbpa counters).
KNOWN: dict[str, tuple[str, str]] = {
    "sm__pipe_tensor_cycles_active": ("tensor pipe", "math"),
    "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active": (
        "tensor pipe",
        "math",
    ),
    "sm__pipe_shared_cycles_active": ("shared pipe (tensor and FP16 dispatch)", "math"),
    "sm__pipe_fma_cycles_active": ("FMA pipe", "math"),
    "sm__pipe_fmaheavy_cycles_active": ("FMA-heavy pipe", "math"),
    "sm__pipe_fp64_cycles_active": ("FP64 pipe", "math"),
    "sm__pipe_alu_cycles_active": ("ALU pipe (integer, logic, conversion)", "math"),
    "sm__pipe_tensor_op_dmma_cycles_active": ("tensor pipe (FP64)", "math"),
    "sm__issue_active": ("instruction issue", "issue"),
    "sm__inst_executed": ("instruction issue", "issue"),
    "sm__instruction_throughput_internal_activity": ("instruction issue", "issue"),
    "sm__inst_executed_pipe_adu": ("ADU pipe (address/branch)", "issue"),
    "sm__inst_executed_pipe_lsu": ("LSU pipe (loads/stores)", "memory"),
    "sm__inst_executed_pipe_uniform": ("uniform pipe", "issue"),
    "sm__inst_executed_pipe_xu": ("XU pipe (transcendentals)", "math"),
    "dram__cycles_active": ("DRAM", "memory"),
    "fbpa__dram_sectors": ("DRAM", "memory"),
    "lts__t_sectors": ("L2", "memory"),
    "lts__t_tag_requests": ("L2 tags", "memory"),
    "lts__d_sectors": ("L2 data", "memory"),
    "lts__lts2xbar_cycles_active": ("L2 to crossbar", "memory"),
    "lts__xbar2lts_cycles_active": ("crossbar to L2", "memory"),
    "l1tex__data_pipe_lsu_wavefronts": ("L1/shared data pipe", "memory"),
    "l1tex__lsu_writeback_active": ("L1/shared writeback", "memory"),
    "l1tex__data_bank_reads": ("L1/shared bank reads", "memory"),
    "l1tex__data_bank_writes": ("L1/shared bank writes", "memory"),
}
_KIND_ORDER = {"math": 0, "memory": 1, "issue": 2, "other": 3}  # wins a tie


class HotUnit(BaseModel):
    """One busy sub-unit: its ncu counter, % of its peak over elapsed cycles, what it is."""

    model_config = ConfigDict(extra="forbid")
    unit: str
    pct: float
    label: str
    kind: str


def describe(unit: str) -> tuple[str, str]:
    """(label, kind) of a breakdown counter."""
    if unit in KNOWN:
        return KNOWN[unit]
    prefix = unit.split("__", 1)[0]
    kind = "memory" if prefix in ("dram", "lts", "l1tex", "fbpa", "gpu") else "other"
    return unit, kind


def name_units(raw: dict[str, list[tuple[str, float]]]) -> dict[str, list[HotUnit]]:
    """Labelled entries per breakdown, busiest first (a tie goes to a math pipe, the tensor pipe
    first: wgmma keeps the shared pipe exactly as busy), one entry per label (ncu counts the
    tensor pipe twice under two names)."""
    out: dict[str, list[HotUnit]] = {}
    for breakdown, entries in raw.items():
        units = [
            HotUnit(unit=u, pct=p, label=describe(u)[0], kind=describe(u)[1]) for u, p in entries
        ]
        units.sort(
            key=lambda h: (-h.pct, _KIND_ORDER.get(h.kind, 3), h.label != "tensor pipe", h.unit)
        )
        kept: list[HotUnit] = []
        for unit in units:
            if all(unit.label != other.label for other in kept):
                kept.append(unit)
        out[breakdown] = kept
    return out


def compute_note(
    classification: str | None, hot: dict[str, list[HotUnit]], roofline: Roofline | None
) -> str | None:
    """What to tell about a compute-bound verdict whose busiest SM unit is not a math pipe."""
    units = hot.get("sm") or []
    if classification != "compute_bound" or not units or units[0].kind == "math":
        return None
    top = units[0]
    note = (
        f"compute-bound by SM throughput, but the busiest SM unit is {top.label} ({top.unit},"
        f" {top.pct:.1f} %), not a math pipe"
    )
    if roofline and roofline.achieved_tflops is not None and roofline.pct_of_roof is not None:
        note += (
            f": {roofline.achieved_tflops:g} TFLOP/s, {roofline.pct_of_roof:.1f} % of its"
            f" {roofline.binding} roof"
        )
    return note
