"""What a projection scales besides a kernel's time: the ratios of the GPU table's figures
(source over target) each rule multiplies a time by, and a kernel's roofline and a card's MFU
figures carried onto the target. Every ceiling of the target is the one ncu measured on the
source x the table's target / source figure (so the same GPU on both sides changes nothing),
and the kernel keeps its work (FLOPs, bytes per level, intensity)."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.stats import six_figures
from .figures import CardRoofline, Roofline
from .gpus import GpuSpec

LEVELS = ("dram", "l2", "l1")
FAMILY_DTYPE = {"bf16": "bf16", "fp16": "fp16", "fp16acc": "fp16", "tf32": "tf32"}


class Ratios:
    """Source over target figures of the table: what each rule multiplies a time by."""

    def __init__(self, source: GpuSpec, target: GpuSpec) -> None:
        self.source, self.target = source, target
        self.same_cc = source.compute_capability == target.compute_capability

    def clock(self) -> float:
        """Source over target maximum SM clock."""
        return _ratio(self.source.sm_clock_max_mhz.value, self.target.sm_clock_max_mhz.value)

    def sms(self) -> float:
        """Source over target SM count."""
        return _ratio(self.source.sm_count.value, self.target.sm_count.value)

    def level(self, level: str) -> tuple[float | None, str | None]:
        """The ratio for a memory level (dram, l2, l1), or None and why."""
        if level == "l1":
            return self.clock() * self.sms(), None
        src, tgt = (getattr(g, f"{level}_tbps") for g in (self.source, self.target))
        if src.value is None or tgt.value is None:
            gpu = self.source.name if src.value is None else self.target.name
            return None, f"the GPU table has no {level.upper()} bandwidth for {gpu}"
        return src.value / tgt.value, None

    def compute(self, family: str | None) -> tuple[float | None, str | None]:
        """The ratio of the peaks of a FLOP family (hgmma_bf16, hmma_tf32, fp32), or why not."""
        if family is None:
            return None, "the kernel executed no FLOPs the report counts"
        if family == "fp32":
            return _ratio(self.source.fp32_tflops.value, self.target.fp32_tflops.value), None
        kind, _, dtype = family.partition("_")
        if kind == "hmma" and not self.same_cc:
            return None, (
                f"{family} is mma.sync, whose peak no datasheet gives across compute"
                f" capabilities ({self.source.compute_capability} -> "
                f"{self.target.compute_capability})"
            )
        src = getattr(self.source.dense_tflops.value, FAMILY_DTYPE.get(dtype, ""), None)
        tgt = getattr(self.target.dense_tflops.value, FAMILY_DTYPE.get(dtype, ""), None)
        if src is None or tgt is None:
            return None, f"the GPU table has no dense {dtype} peak for both GPUs"
        return src / tgt, None


def _ratio(src: float | None, tgt: float | None) -> float:
    assert src is not None and tgt is not None  # sm_count and clock are checked on load
    return src / tgt


def _t(value: float | None, ratio: float | None) -> float | None:
    """A rate of the source (a ceiling, an achieved figure) divided by a source/target ratio,
    six figures; None where either is unknown."""
    return six_figures(value / ratio) if value is not None and ratio else None


def project_roofline(roof: Roofline, factor: float, ratios: Ratios) -> Roofline:
    """The kernel's roofline on the target: ceilings over their ratios, achieved rates over the
    time factor, the binding roof and the share of it found again as `verdicts.roofline` does."""
    compute = ratios.compute(roof.family)[0] if roof.family else None
    ceiling = _t(roof.compute_ceiling_tflops, compute)
    bandwidth = {lvl: _t(roof.bandwidth_tbps.get(lvl), ratios.level(lvl)[0]) for lvl in LEVELS}
    achieved = _t(roof.achieved_tflops, factor)
    moved = {lvl: _t(v, factor) for lvl, v in roof.achieved_tbps.items()}
    roofs = {"compute": ceiling} if ceiling else {}
    for level, rate in bandwidth.items():
        if rate and roof.intensity.get(level):
            roofs[level] = rate * roof.intensity[level]  # type: ignore[operator]
    binding = min(roofs, key=lambda k: roofs[k] or 0.0) if roofs else None
    top = roofs[binding] if binding else None
    pct = 100 * achieved / top if achieved is not None and top else None
    used = {lvl: moved[lvl] / bw for lvl, bw in bandwidth.items() if bw and moved.get(lvl)}  # type: ignore[operator]
    if binding is None and used:  # no FLOPs: the level it uses most
        binding = max(used, key=used.__getitem__)
        pct = 100 * used[binding]
    clock = roof.ceiling_sm_clock_ghz
    return roof.model_copy(
        update={
            "achieved_tflops": achieved,
            "compute_ceiling_tflops": ceiling,
            "bandwidth_tbps": bandwidth,
            "achieved_tbps": moved,
            "binding": binding,
            "roof_tflops": six_figures(top) if top else None,
            "pct_of_roof": six_figures(pct) if pct is not None else None,
            "ceiling_sm_clock_ghz": six_figures(clock / ratios.clock()) if clock else None,
        }
    )


def project_card_roofline(
    roof: CardRoofline, params: Mapping[str, object], nominal: int | None, summed: float | None,
    ratios: Ratios,
) -> CardRoofline:  # fmt: skip
    """The card's MFU figures on the target: the peaks of its dtype over their ratio, the
    clocks over the clock ratio, MFU of its nominal FLOPs in the projected time."""
    ratio = ratios.compute(_family(params))[0]
    peak, peak_max = _t(roof.peak_tflops, ratio), _t(roof.peak_max_clock_tflops, ratio)
    achieved = nominal / (summed * 1e6) if nominal and summed else None

    def mfu(at: float | None) -> float | None:
        return six_figures(100 * achieved / at) if achieved is not None and at else None

    clocks = {k: getattr(roof, k) for k in ("peak_clock_ghz", "max_clock_ghz")}
    return roof.model_copy(
        update={
            "mfu_pct": mfu(peak),
            "peak_tflops": peak,
            "mfu_max_clock_pct": mfu(peak_max),
            "peak_max_clock_tflops": peak_max,
            **{k: six_figures(v / ratios.clock()) if v else None for k, v in clocks.items()},
        }
    )


def _family(params: Mapping[str, object]) -> str | None:
    """The FLOP family whose peak is the op's MFU basis (`verdicts.roofline.compute_dtype`):
    wgmma of bf16/fp16, of tf32 for fp32 with TF32 allowed, else FP32."""
    dtype = params.get("dtype")
    if dtype == "fp32":
        return "hgmma_tf32" if params.get("allow_tf32") else "fp32"
    return f"hgmma_{dtype}" if dtype in ("bf16", "fp16") else None
