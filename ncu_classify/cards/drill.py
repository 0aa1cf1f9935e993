"""The drill-down section of a kernel and the settled verdict of a card: what the warp-state
counters said where the first verdict was unresolved or borderline (models only; the figures are
computed in `verdicts.drill`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..core.measured import without_unmeasured
from ..core.units import NonNegative
from .figures import Margin


class StallShare(BaseModel):
    """One stall reason: warps stalled on it per issued instruction, and its share of the CPI."""

    model_config = ConfigDict(extra="forbid")
    reason: str
    cycles_per_issue: NonNegative = Field(description="warp cycles per issued instruction")
    share_pct: NonNegative = Field(description="% of all the reasons' cycles (their sum: CPI)")


class DrillSource(BaseModel):
    """Where the warp-state counters came from."""

    model_config = ConfigDict(extra="forbid")
    experiment: str = Field(
        description="drill-down capture (its folder), or the report's own WarpStateStats"
    )
    report: str | None = None
    replay_passes: int | None = None
    created_at: str | None = Field(default=None, description="when the drill-down was captured")
    dur_us: NonNegative | None = Field(
        default=None, description="the kernel's duration in the drill-down capture"
    )


class DrillDown(BaseModel):
    """A kernel's warp-state drill-down and the class it settles on."""

    model_config = ConfigDict(extra="forbid")
    cpi: NonNegative | None = Field(
        description="warp cycles per issued instruction (smsp__average_warp_latency_per_inst"
        "_issued.ratio)"
    )
    stalls: Annotated[list[StallShare], without_unmeasured("cycles_per_issue", "share_pct")] = (
        Field(description="every reason, largest share first")
    )
    top_reasons: list[str] = Field(
        description="the largest reasons, in order, until 90 % of the stall cycles"
    )
    groups: dict[str, NonNegative] = Field(
        description="share of the CPI (%) per group of reasons (core.stalls.STALL_GROUPS)"
    )
    deciders: dict[str, NonNegative | None] = Field(
        description="bank conflicts, L1 hit rate, LSU pipe, issue activity, eligible warps,"
        " achieved over theoretical occupancy"
    )
    settled: str | None = Field(description="the class the stall mix settles on")
    rule: str | None = Field(default=None, description="text of the settle rule that matched")
    counter_experiment: str | None = None
    finding: str | None = Field(
        default=None, description="the mix in one line: the reasons that decide, and the pipe"
    )
    margin: Margin | None = None
    source: DrillSource


class Settled(BaseModel):
    """A card's settled verdict: its dominant kernel's drill-down class."""

    model_config = ConfigDict(extra="forbid")
    primary: str = Field(description="the settled class")
    rule: str | None
    counter_experiment: str | None
    finding: str | None
    settled_by: str = Field(description="the experiment that settled it")
    borderline: bool = False
