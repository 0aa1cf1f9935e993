"""The hot unit, named: the busiest entries of ncu's SM and memory throughput breakdowns.

`sm__throughput` is the maximum over many SM sub-units, so "compute-bound" alone does not say
whether a math pipe or instruction issue is busy: a depthwise fp32 conv3d reads 78 % SM
throughput from `sm__issue_active` while doing 2.7 TFLOP/s, 4 % of the FP32 roof. Each entry gets
a label and a kind (math, issue, memory, other); a compute-bound verdict whose busiest SM unit is
not a math pipe says so on the kernel.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from ..core.trusted import trusted

# ncu counter (without `.avg.pct_of_peak_sustained_elapsed`) -> (label, kind): every member of
# the two breakdowns that the committed H200 reports carry (`--metrics` captures and `--set full`
# alike; the labels follow ncu's own metric descriptions). A counter not listed gets a label
# derived from its name (`unit_label_kind`).
KNOWN: dict[str, tuple[str, str]] = {
    # SM breakdown: math pipes
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
    "sm__inst_executed_pipe_xu": ("XU pipe (transcendentals)", "math"),
    # SM breakdown: instruction issue and the other pipes
    "sm__issue_active": ("instruction issue", "issue"),
    "sm__inst_executed": ("instruction issue", "issue"),
    "sm__instruction_throughput_internal_activity": ("instruction issue", "issue"),
    "sm__inst_executed_pipe_adu": ("ADU pipe (address/branch)", "issue"),
    "sm__inst_executed_pipe_cbu_pred_on_any": ("CBU pipe (branches, barriers)", "issue"),
    "sm__inst_executed_pipe_uniform": ("uniform pipe", "issue"),
    "sm__inst_executed_pipe_ipa": ("IPA pipe (attribute interpolation)", "issue"),
    "sm__mio_inst_issued": ("MIO instruction issue", "issue"),
    # SM breakdown: the SM's side of memory
    "sm__inst_executed_pipe_lsu": ("LSU pipe (loads/stores)", "memory"),
    "sm__inst_executed_pipe_tex": ("TEX pipe (texture instructions)", "memory"),
    "sm__memory_throughput_internal_activity": ("SM memory instruction throughput", "memory"),
    "sm__mio2rf_writeback_active": ("MIO to register file writeback", "memory"),
    "sm__mio_pq_read_cycles_active": ("MIO queue: operands to pipes", "memory"),
    "sm__mio_pq_write_cycles_active": ("MIO queue: operands from registers", "memory"),
    "sm__pipe_tma_cycles_active": ("TMA pipe (tensor memory accelerator)", "memory"),
    "idc__request_cycles_active": ("indexed constant cache", "memory"),
    # memory breakdown: DRAM and the whole pipeline
    "dram__cycles_active": ("DRAM", "memory"),
    "fbpa__dram_sectors": ("DRAM", "memory"),
    "gpu__compute_memory_access_throughput_internal_activity": (
        "caches and DRAM (internal activity)",
        "memory",
    ),
    "gpu__compute_memory_request_throughput_internal_activity": (
        "SM-cache-DRAM interconnect",
        "memory",
    ),
    # memory breakdown: L2
    "lts__t_sectors": ("L2", "memory"),
    "lts__t_tag_requests": ("L2 tags", "memory"),
    "lts__d_sectors": ("L2 data", "memory"),
    "lts__d_sectors_fill_device": ("L2 fills from DRAM", "memory"),
    "lts__d_sectors_fill_sysmem": ("L2 fills from system memory", "memory"),
    "lts__d_atomic_input_cycles_active": ("L2 atomic units", "memory"),
    "lts__d_decomp_input_sectors": ("L2 decompressor", "memory"),
    "lts__lts2xbar_cycles_active": ("L2 to crossbar", "memory"),
    "lts__xbar2lts_cycles_active": ("crossbar to L2", "memory"),
    # memory breakdown: L1/shared and texture
    "l1tex__data_pipe_lsu_wavefronts": ("L1/shared data pipe", "memory"),
    "l1tex__data_pipe_tex_wavefronts": ("L1 texture data pipe", "memory"),
    "l1tex__lsu_writeback_active": ("L1/shared writeback", "memory"),
    "l1tex__tex_writeback_active": ("L1 texture writeback", "memory"),
    "l1tex__data_bank_reads": ("L1/shared bank reads", "memory"),
    "l1tex__data_bank_writes": ("L1/shared bank writes", "memory"),
    "l1tex__lsuin_requests": ("L1/shared requests from the LSU", "memory"),
    "l1tex__texin_sm2tex_req_cycles_active": ("L1 texture requests from the SM", "memory"),
    "l1tex__f_wavefronts": ("L1 texture F-stage", "memory"),
    "l1tex__m_l1tex2xbar_req_cycles_active": ("L1 to crossbar (misses to L2)", "memory"),
    "l1tex__m_xbar2l1tex_read_sectors": ("crossbar to L1 (L2 returns)", "memory"),
    "l1tex__m_xbar2l1tex_read_sectors_mem_dshared": (
        "crossbar to distributed shared memory",
        "memory",
    ),
    "l1tex__tmain_requests": ("TMA instructions", "memory"),
}
# Unit prefixes of ncu counters, for the label of a counter that KNOWN does not list.
UNIT_NAMES = {
    "sm": "SM",
    "smsp": "SM sub-partition",
    "idc": "indexed constant cache",
    "dram": "DRAM",
    "fbpa": "DRAM controller",
    "lts": "L2",
    "l1tex": "L1",
    "gpu": "GPU",
    "gr": "graphics engine",
    "pcie": "PCIe",
    "nvlrx": "NVLink receive",
    "nvltx": "NVLink transmit",
}
_MEMORY_UNITS = ("dram", "lts", "l1tex", "fbpa", "gpu", "idc")
_WORDS = {"inst": "instructions", "xbar": "crossbar", "req": "requests"}
_KIND_ORDER = {"math": 0, "memory": 1, "issue": 2, "other": 3}  # wins a tie


class HotUnit(BaseModel):
    """One busy sub-unit: its ncu counter, % of its peak over elapsed cycles, what it is."""

    model_config = ConfigDict(extra="forbid")
    unit: str
    pct: float
    label: str
    kind: str

    @field_validator("label")
    @classmethod
    def _named(cls, label: str, info: ValidationInfo) -> str:
        """A label that is the raw counter name (cards written before the counter had one)
        is replaced by the counter's label."""
        unit = info.data.get("unit")
        return unit_label_kind(unit)[0] if isinstance(unit, str) and label == unit else label


@functools.lru_cache(maxsize=1024)
def unit_label_kind(unit: str) -> tuple[str, str]:
    """(label, kind) of a breakdown counter: KNOWN's, or one read from the counter's name."""
    if unit in KNOWN:
        return KNOWN[unit]
    prefix = unit.split("__", 1)[0]
    kind = "memory" if prefix in _MEMORY_UNITS else "other"
    return fallback_label(unit), kind


def fallback_label(unit: str) -> str:
    """A readable label for a counter KNOWN does not list: its unit named, the rest in words,
    counting suffixes dropped (`lts__d_sectors_fill_peer` -> `L2: d sectors fill peer`)."""
    prefix, _, rest = unit.partition("__")
    if not rest:
        return f"{unit.replace('_', ' ')} (counter without a label)"
    words = [_WORDS.get(w, w) for w in rest.split("_") if w]
    while len(words) > 1 and words[-1] in ("active", "cycles", "activity"):
        words.pop()
    return f"{UNIT_NAMES.get(prefix, prefix.upper())}: {' '.join(words)}"


def name_units(raw: dict[str, list[tuple[str, float]]]) -> dict[str, list[HotUnit]]:
    """Labelled entries per breakdown, busiest first (a tie goes to a math pipe, the tensor pipe
    first: wgmma keeps the shared pipe exactly as busy), one entry per label (ncu counts the
    tensor pipe twice under two names)."""
    out: dict[str, list[HotUnit]] = {}
    for breakdown, entries in raw.items():
        ranked = sorted(  # plain tuples: the models are made for the kept entries alone
            (-pct, _KIND_ORDER.get(kind, 3), label != "tensor pipe", unit, pct, label, kind)
            for unit, pct in entries
            for label, kind in (unit_label_kind(unit),)
        )
        kept: list[HotUnit] = []
        labels: set[str] = set()
        for *_, unit, pct, label, kind in ranked:
            if label not in labels:
                labels.add(label)
                kept.append(trusted(HotUnit, unit=unit, pct=pct, label=label, kind=kind))
        out[breakdown] = kept
    return out
