"""How much of the recorded program the cards cover, per stage: the models a cards file
carries (`coverage`). Coverage is reckoned against the program's own kernel time per stage
(torch.profiler at record time) when the recording ran on a GPU, else against its op calls;
what no card covers is listed with its time and the reason, largest first."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.units import NonNegative

# How a cards file's input warnings name a capture folder read without its manifest.json, the
# file that carries the recorded program's times (so coverage is unknown for another reason).
WITHOUT_MANIFEST = "without its manifest.json: read as loose reports"
# Why the shapes `capture --coverage` left below its target have no card (one item per stage).
BELOW_TARGET_WHY = (
    "below the target of capture --coverage: the stage's smallest shapes, not captured"
    " (capture --resume --coverage with a higher target takes them)"
)


class UncoveredWork(BaseModel):
    """Device work of a stage no card stands for, with its time per inference if measured."""

    model_config = ConfigDict(extra="forbid")
    name: str
    why: str
    calls: int = Field(ge=0)
    real_us: NonNegative | None = Field(description="its kernel time per inference in the program")
    groups: list[str] | None = Field(
        default=None,
        description="the shapes it holds, where they are known: those a capture left below its"
        " coverage target (`diff` pairs them with the other side's cards as below_target)",
    )


class StageCoverage(BaseModel):
    """One stage of a recorded program set against its cards."""

    model_config = ConfigDict(extra="forbid")
    stage: str
    basis: Literal["kernel_time", "calls"] = Field(
        description="kernel_time: the program's kernel time (torch.profiler on the GPU at record"
        " time); calls: op calls (recorded without a GPU)"
    )
    coverage_pct: float | None = Field(
        ge=0, le=100, description="share of the program's kernel time (or calls) cards stand for"
    )
    real_us: NonNegative | None = Field(
        description="the program's kernel time in the stage, per run"
    )
    covered_real_us: NonNegative | None = Field(description="of it, in shapes that have cards")
    replayed_us: NonNegative | None = Field(description="those cards' summed kernel time x calls")
    calls: int = Field(ge=0, description="the program's device-op calls in the stage")
    covered_calls: int = Field(ge=0)
    uncovered: list[UncoveredWork] = Field(description="what no card covers, largest first")
    light_shapes: int = Field(
        default=0, ge=0, description="of the covered shapes, those captured with the light list"
    )
    light_real_us: NonNegative | None = Field(
        default=None, description="their program kernel time per run (None by calls or if none)"
    )
