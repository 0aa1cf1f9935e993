"""The roofline of a kernel from its own counters: FLOPs per family, intensity at DRAM, L2 and
L1, the ceilings, the binding roof and how far the kernel is from it.

Ceilings come from ncu's peak metrics x the clock measured during the kernel (no table of
GPUs): compute = the family's FLOP/cycle x the SM clock, bandwidth = bytes/cycle x the unit's
clock. A measured clock is cycles over ncu's duration and reads above the device's maximum on
short kernels (2.034 GHz on a 44 us cast of an H200 whose maximum is 1.98 GHz): a ceiling is
never above the peak per cycle x the device's maximum clock (SM and L1, DRAM), and each clock
capped is flagged on the kernel. The compute ceiling is that of the family the kernel actually
used (an mma.sync kernel tops out at 2/3 of wgmma). The binding roof is the lowest of the
compute ceiling and each bandwidth x the kernel's intensity there. A figure whose inputs a
report lacks (or gives as a peak or clock of 0) stays None and is listed in `missing`, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cards.figures import CardRoofline, Roofline
from ..cards.machine import GpuInfo
from ..core.counters import MEMORY_LEVELS, TENSOR_FAMILIES
from ..core.stats import six_figures
from ..core.trusted import trusted

FAMILY_KEYS = {f"{family}_{kind}": f"flops_{family}_{kind}" for family, kind in TENSOR_FAMILIES}
LEVELS = tuple(MEMORY_LEVELS)


# Clock key -> (the device's maximum in the card's `gpu`, kHz; what that maximum is).
CLOCK_LIMITS = {
    "sm_clock_ghz": ("sm_clock_max_khz", "the device's maximum SM clock"),
    "l1_clock_ghz": ("sm_clock_max_khz", "the device's maximum SM clock (L1TEX runs on it)"),
    "dram_clock_ghz": ("dram_clock_max_khz", "the device's memory clock"),
}


def device_max_ghz(device: GpuInfo | None, key: str) -> float | None:
    """The device's maximum for a clock key in GHz (from kHz in `device`), None if unknown."""
    khz = device.max_khz(CLOCK_LIMITS[key][0]) if device is not None else None
    return None if khz is None else khz / 1e6


def capped_clocks(
    metrics: Mapping[str, float | None], device: GpuInfo | None
) -> tuple[dict[str, float | None], list[str]]:
    """The clocks ceilings use, each measured clock capped at the device's maximum, and a flag
    for each one capped."""
    clocks: dict[str, float | None] = {}
    flags: list[str] = []
    for key, (_, what) in CLOCK_LIMITS.items():
        measured, limit = metrics.get(key), device_max_ghz(device, key)
        clocks[key] = measured
        if measured is not None and limit is not None and measured > limit:
            clocks[key] = limit
            flags.append(
                f"{key} {measured:.6g} GHz measured over {metrics.get('dur_us')} us is above"
                f" {what} {limit:.6g} GHz: the ceilings use {limit:.6g} GHz"
            )
    return clocks, flags


class _Inputs:
    """A kernel's metrics with its capped clocks over them, noting each input that is missing."""

    __slots__ = ("clocks", "metrics", "missing")

    def __init__(self, metrics: Mapping[str, float | None], clocks: dict[str, float | None]):
        self.metrics, self.clocks = metrics, clocks
        self.missing: set[str] = set()

    def get(self, key: str) -> float | None:
        """The input's value (a capped clock where the key is one); None and noted if missing."""
        value = self.clocks[key] if key in self.clocks else self.metrics.get(key)
        if value is None:
            self.missing.add(key)
        return value

    def rate(self, key: str) -> float | None:
        """A peak or a clock: a 0 or a negative is as unknown as a missing one (the reader
        drops ncu's peaks of 0; a card from elsewhere may carry one), never a ceiling."""
        value = self.get(key)
        if value is not None and value <= 0:
            self.missing.add(key)
            return None
        return value


def _flops(inputs: _Inputs) -> dict[str, float]:
    """Executed FLOPs per family that the report measured (FP32 = 2 x FFMA + FADD + FMUL)."""
    out = {
        family: float(value)
        for family, key in FAMILY_KEYS.items()
        if (value := inputs.get(key)) is not None
    }
    ffma, fadd, fmul = inputs.get("inst_ffma"), inputs.get("inst_fadd"), inputs.get("inst_fmul")
    if ffma is not None and fadd is not None and fmul is not None:
        out["fp32"] = 2 * ffma + fadd + fmul
    return out


def _ceiling(family: str, inputs: _Inputs) -> float | None:
    """FLOP/s the family can reach at the SM clock measured during the kernel."""
    clock = inputs.rate("sm_clock_ghz")
    per_cycle = inputs.rate("peak_ffma" if family == "fp32" else f"peak_{family}")
    if clock is None or per_cycle is None:
        return None
    return per_cycle * (2 if family == "fp32" else 1) * clock * 1e9


def _bandwidths(inputs: _Inputs) -> dict[str, float]:
    """Peak bytes/s per memory level at that unit's measured clock."""
    out = {}
    for level, peak_key, clock_key in _LEVEL_KEYS:
        peak, clock = inputs.rate(peak_key), inputs.rate(clock_key)
        if peak is not None and clock is not None:
            out[level] = peak * clock * 1e9
    return out


_LEVEL_KEYS = tuple((level, f"peak_{level}_bytes", f"{level}_clock_ghz") for level in LEVELS)
_BYTES_KEYS = tuple((level, f"{level}_bytes") for level in LEVELS)


def kernel_roofline(metrics: Mapping[str, float | None], device: GpuInfo | None = None) -> Roofline:
    """The roofline figures of one kernel from its card metrics; `device` (the card's `gpu`)
    gives the maximum clocks that cap the ceilings."""
    clocks, flags = capped_clocks(metrics, device)
    inputs = _Inputs(metrics, clocks)
    flops = _flops(inputs)
    total = sum(flops.values()) if flops else None
    family = max(flops, key=flops.__getitem__) if flops and total else None
    seconds = metrics.get("dur_us")
    achieved = total / (seconds * 1e-6) if total is not None and seconds else None
    moved_bytes = {level: inputs.get(key) for level, key in _BYTES_KEYS}
    intensity = {
        level: (total / nbytes if total is not None and nbytes else None)
        for level, nbytes in moved_bytes.items()
    }
    ceiling = _ceiling(family, inputs) if family else None
    bandwidth = _bandwidths(inputs)
    moved = {
        level: (moved_bytes[level] or 0) / (seconds * 1e-6)
        for level in bandwidth
        if seconds and moved_bytes[level] is not None
    }
    roofs = {"compute": ceiling} if ceiling else {}
    for level, rate in bandwidth.items():
        if intensity[level]:
            roofs[level] = rate * intensity[level]  # type: ignore[operator]
    binding = min(roofs, key=roofs.__getitem__) if roofs else None
    roof = roofs[binding] if binding else None
    pct = 100 * achieved / roof if achieved is not None and roof else None
    if binding is None and moved:  # no FLOPs: the level whose bandwidth it uses most
        binding = max(moved, key=lambda level: moved[level] / bandwidth[level])
        pct = 100 * moved[binding] / bandwidth[binding]
    return trusted(  # every value below is of its field's type
        Roofline,
        family=family,
        executed_flops=total,
        achieved_tflops=_t(achieved),
        intensity={k: _round(v) for k, v in intensity.items()},
        compute_ceiling_tflops=_t(ceiling),
        bandwidth_tbps={level: _t(bandwidth.get(level)) for level in LEVELS},
        achieved_tbps={level: _t(moved.get(level)) for level in LEVELS},
        binding=binding,
        roof_tflops=_t(roof),
        pct_of_roof=_round(pct),
        missing=sorted(inputs.missing),
        ceiling_sm_clock_ghz=clocks["sm_clock_ghz"],
        clock_flags=flags,
    )


def _t(value: float | None) -> float | None:
    return _round(value / 1e12) if value is not None else None


def _round(value: float | None) -> float | None:
    return six_figures(value) if value is not None else None


# The dense peak an op of this dtype could use at best (MFU's denominator): the wgmma family.
DTYPE_PEAK = {"bf16": "peak_hgmma_bf16", "fp16": "peak_hgmma_fp16", "tf32": "peak_hgmma_tf32"}


def compute_dtype(params: Mapping[str, Any]) -> str | None:
    """The type an op computes in, for its MFU: bf16/fp16, tf32 for fp32 with TF32 allowed
    (cuDNN's default for convs; off by default for matmuls), fp32; None if unknown."""
    dtype = params.get("dtype")
    if dtype == "fp32":
        return "tf32" if params.get("allow_tf32") else "fp32"
    return dtype if dtype in ("bf16", "fp16") else None


Kernels = list[tuple[Mapping[str, float | None], Roofline | None]]


def _positive(value: float | None) -> float | None:
    """A peak, clock or count that only a positive value makes sense of; else None (a card
    from elsewhere may carry a 0 or a negative: unknown, never a figure of its own)."""
    return value if value is not None and value > 0 else None


def card_roofline(
    kernels: Kernels,
    nominal_flops: int | None,
    summed_us: float | None,
    dtype: str | None,
    device: GpuInfo | None = None,
) -> CardRoofline:
    """Card-level figures from its kernels' (metrics, roofline); `dtype` is the op's compute
    type (bf16, fp16, tf32, fp32), None for a foreign card; `device` the card's `gpu`."""
    executed = [r.executed_flops for _, r in kernels if r is not None]
    total = sum(e for e in executed if e is not None) if executed and None not in executed else None
    per_cycle, clock = map(_positive, _dtype_peak(kernels, dtype, device))
    max_clock = _positive(device_max_ghz(device, "sm_clock_ghz"))
    nominal_flops = nominal_flops if nominal_flops and nominal_flops > 0 else None
    peak = per_cycle * clock * 1e9 if per_cycle is not None and clock else None
    peak_max = per_cycle * max_clock * 1e9 if per_cycle is not None and max_clock else None
    useful = nominal_flops / total if nominal_flops and total else None
    achieved = nominal_flops / (summed_us * 1e-6) if nominal_flops and summed_us else None
    return CardRoofline(
        executed_flops=total,
        useful_over_executed=_round(useful),
        mfu_pct=_round(100 * achieved / peak) if achieved is not None and peak else None,
        peak_tflops=_t(peak),
        peak_clock_ghz=clock if peak else None,
        mfu_max_clock_pct=_round(100 * achieved / peak_max) if achieved and peak_max else None,
        peak_max_clock_tflops=_t(peak_max),
        max_clock_ghz=max_clock,
    )


def _dtype_peak(
    kernels: Kernels, dtype: str | None, device: GpuInfo | None
) -> tuple[float | None, float | None]:
    """Dense FLOP/cycle for `dtype` and the SM clock (capped at the device's maximum) of the
    card's longest kernel."""
    if not kernels or dtype is None:
        return None, None
    metrics = max(kernels, key=lambda item: item[0].get("dur_us") or 0.0)[0]
    clock = capped_clocks(metrics, device)[0]["sm_clock_ghz"]
    if dtype == "fp32":
        per_cycle = metrics.get("peak_ffma")
        per_cycle = 2 * per_cycle if per_cycle is not None else None
    else:
        per_cycle = metrics.get(DTYPE_PEAK.get(dtype, ""))
    return per_cycle, clock
