"""What a card says about its repeated measurements (capture --repeat N): each kernel's figures
as spreads, and for the card its summed time per repeat, the clock regime it ran under and
whether its verdict would survive the measured spread. Models only: `verdicts.repeats` fills
them in."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.measured import SPREAD_FIGURES, none_if_unmeasured, without_unmeasured
from ..core.stats import Spread

# a spread without its mean (NaN in a file) is no spread: read as missing
MaybeSpread = Annotated[Spread | None, none_if_unmeasured(*SPREAD_FIGURES)]
Interval = Annotated[list[float] | None, none_if_unmeasured()]

Basis = Literal["durations", "counters"]


class KernelRepeats(BaseModel):
    """One kernel measured n times."""

    model_config = ConfigDict(extra="forbid")
    n: int = Field(description="launches measured (the counters launch and the repeats)")
    basis: Basis = Field(
        description="durations: the card metrics counted once, the duration n times;"
        " counters: every metric n times"
    )
    dur_us: MaybeSpread = Field(description="None where a launch has no duration")
    metrics: Annotated[dict[str, Spread], without_unmeasured(*SPREAD_FIGURES)] = Field(
        default_factory=dict, description="card metric -> its spread over the repeats"
    )
    scaled: list[str] = Field(
        default_factory=list,
        description="metrics whose spread is the duration's (basis durations): % of peak over"
        " elapsed time, the work counted once and divided by each repeat's duration",
    )


class ClockRegime(BaseModel):
    """How the clocks were set and what they read during the card's kernels."""

    model_config = ConfigDict(extra="forbid")
    clock_control: str | None = Field(description="ncu --clock-control (none: the GPU's own)")
    pipeline_boost_state: str | None = Field(
        description="ncu's Tensor Core boost state (stable, dynamic); None where ncu has none"
    )
    sm_clock_ghz: MaybeSpread = Field(description="SM clock seen, over kernels and repeats")
    dram_clock_ghz: MaybeSpread = Field(description="memory clock seen, likewise")


class Stability(BaseModel):
    """Whether the verdict survives its measured spread."""

    model_config = ConfigDict(extra="forbid")
    verdict: Literal["stable", "unstable", "unmeasured"] = Field(
        description="stable: no value inside the 95 % intervals of the deciding metric and of"
        " the nearest rival's changes the class; unmeasured: neither has a spread"
    )
    metric: str | None = Field(description="the deciding metric")
    interval: Interval = Field(description="its 95 % interval [low, high]")
    margin_sd: float | None = Field(
        description="distance to the deciding threshold in standard deviations of that metric"
    )
    rival: str | None = Field(description="the nearest rule that would fire instead")
    rival_metric: str | None = None
    rival_interval: Interval = None
    rival_margin_sd: float | None = None
    flips_to: str | None = Field(description="the class a value inside the intervals gives")
    why: str = Field(description="one line for people")


class Measurement(BaseModel):
    """A card's repeated measurement: its time per repeat and how firm its verdict is."""

    model_config = ConfigDict(extra="forbid")
    repeats: int
    basis: Basis
    summed_kernel_us: MaybeSpread = Field(description="the card's kernels summed, per repeat")
    stability: Stability | None = Field(description="of the dominant kernel's verdict")
    clock: ClockRegime
    notes: list[str] = Field(default_factory=list, description="repeats left out, and why")
