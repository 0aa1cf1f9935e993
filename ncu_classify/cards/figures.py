"""The figures a kernel or card carries beside its metrics: where it sits on the roofline, the
roofline of the whole card (MFU), and how firm its verdict is. Models only: `verdicts.roofline`
and `verdicts.margins` compute them, every reader of a cards file reads them from here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Roofline(BaseModel):
    """Where one kernel sits on the roofline (T = 10^12; intensity in FLOP/byte)."""

    model_config = ConfigDict(extra="forbid")
    family: str | None = Field(description="the FLOP family it used most: hgmma_bf16, ..., fp32")
    executed_flops: float | None = Field(description="FLOPs executed, all families, padding too")
    achieved_tflops: float | None
    intensity: dict[str, float | None] = Field(description="FLOP/byte at dram, l2, l1")
    compute_ceiling_tflops: float | None = Field(description="peak of the family used")
    bandwidth_tbps: dict[str, float | None] = Field(description="peak bytes/s at dram, l2, l1")
    achieved_tbps: dict[str, float | None] = Field(description="bytes/s moved at dram, l2, l1")
    binding: str | None = Field(
        description="compute, dram, l2 or l1: the lowest roof; for a kernel without FLOPs (a"
        " copy, a transpose) the memory level it uses most of"
    )
    roof_tflops: float | None
    pct_of_roof: float | None
    missing: list[str] = Field(default_factory=list, description="inputs the report lacked")
    ceiling_sm_clock_ghz: float | None = Field(
        default=None,
        description="SM clock behind the compute (and L1) ceiling: the one measured during the"
        " kernel, capped at the device's maximum",
    )
    clock_flags: list[str] = Field(
        default_factory=list,
        description="clocks measured above the device's maximum, and the clock the ceilings"
        " used instead (SM and L1 against the maximum GPU clock, DRAM against the memory"
        " clock; L2 has no device figure to check against)",
    )


class CardRoofline(BaseModel):
    """The shape's work against what ran: useful FLOPs over executed ones, and MFU on two bases:
    the SM clock seen during the card's longest kernel, and the device's maximum clock."""

    model_config = ConfigDict(extra="forbid")
    executed_flops: float | None = Field(description="all kernels of the card, all families")
    useful_over_executed: float | None = Field(
        description="the shape's nominal FLOPs / executed FLOPs (tile padding, extra kernels)"
    )
    mfu_pct: float | None = Field(
        description="nominal FLOPs per second of summed kernel time, % of the device's dense"
        " peak for the op's dtype (wgmma bf16/fp16/tf32, or 2 x FFMA for fp32 without TF32)"
        " at peak_clock_ghz, the clock seen during the kernel"
    )
    peak_tflops: float | None = Field(description="that dense peak, at peak_clock_ghz")
    peak_clock_ghz: float | None = Field(
        default=None,
        description="SM clock of peak_tflops and mfu_pct: measured during the card's longest"
        " kernel, capped at the device's maximum",
    )
    mfu_max_clock_pct: float | None = Field(
        default=None,
        description="the same MFU against the dense peak at the device's maximum SM clock"
        " (max_clock_ghz; the datasheet basis, to compare GPUs and runs like with like)",
    )
    peak_max_clock_tflops: float | None = Field(
        default=None, description="the dense peak at max_clock_ghz"
    )
    max_clock_ghz: float | None = Field(
        default=None,
        description="the device's maximum SM clock (device__attribute_max_gpu_frequency_khz)",
    )


class Margin(BaseModel):
    """How firm a kernel's verdict is."""

    model_config = ConfigDict(extra="forbid")
    metric: str | None = Field(description="the metric whose threshold decided the verdict")
    distance: float | None = Field(description="how far it is from that threshold")
    alternative: str | None = Field(description="the rule nearest to firing instead")
    alternative_metric: str | None = None
    alternative_distance: float | None = None
    borderline: bool = Field(description="a distance within the rules file's borderline margin")
    rival_unchecked: bool = Field(
        default=False,
        description="the alternative is an earlier rule that could not be decided (a metric it"
        " needs was not measured, as in a light capture): it might have fired instead",
    )
