"""What a recording says about the program it ran, beside its shapes: how it was recorded, the
program's own device time per stage (kernel time measured by torch.profiler on a GPU, else
call counts), and the calls no shape covers, with the reason. Capture hands the totals on in
its manifest; classify sets them against the cards (coverage)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ..core.errors import error_loc
from ..core.units import NonNegative
from .aten import AtenShape, Keywords
from .ops import PositiveInt

StageName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_]+$")]
Count = Annotated[int, Field(ge=0)]


class StageTime(BaseModel):
    """The program's device work in one stage per run: op calls, and with a GPU the kernels
    they launched and those kernels' summed time."""

    model_config = ConfigDict(extra="forbid", strict=True)
    calls: Count
    kernels: Count | None = None
    kernel_us: NonNegative | None = None
    copy_us: NonNegative | None = Field(
        default=None, description="memory copies and sets: device time, but not kernels"
    )


class UncoveredCall(BaseModel):
    """Device work of a stage that no shape stands for (an op the replay cannot trust, one the
    recorder could not describe, kernels outside any op), with its time when measured."""

    model_config = ConfigDict(extra="forbid", strict=True)
    stage: str
    name: str
    why: str
    calls: Count
    kernels: Count | None = None
    kernel_us: NonNegative | None = None


class RecordedTotals(BaseModel):
    """The program's device time per stage and what of it no shape covers. `basis` says how it
    was measured: `kernel_time` (torch.profiler's CUPTI kernel durations) or `calls` (no GPU
    at record time: op calls counted)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    basis: Literal["kernel_time", "calls"]
    stages: dict[str, StageTime]
    uncovered: list[UncoveredCall] = Field(default_factory=list)
    setup_kernel_us: NonNegative | None = Field(
        default=None, description="kernels of model building (initialisers, casts): not counted"
    )


class RecordedOp(BaseModel):
    """One distinct device op as the first recordings of device ops listed it beside the
    stages (`recorded.ops`); read as an `aten` shape of its stage (`ShapesFile.entries`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    stage: StageName
    op: str
    args: list[Any]
    kwargs: Keywords = Field(default_factory=dict)
    calls: PositiveInt
    source: str = ""

    @model_validator(mode="after")
    def _replayable(self) -> RecordedOp:
        """Refused when read, naming the field, if it makes no `aten` shape."""
        try:
            self.as_shape()
        except ValidationError as exc:
            first = exc.errors()[0]
            where = list(error_loc(first))
            where[:1] = [{"overload": "op", "name": "id"}.get(str(where[0]), where[0])]
            raise PydanticCustomError(
                "recorded_op", "{problem}", {"inner": tuple(where), "problem": first["msg"]}
            ) from None
        return self

    def as_shape(self) -> AtenShape:
        """The op as the shape a recording writes today (its id, less the stage, its name)."""
        return AtenShape(
            op="aten",
            overload=self.op,
            args=self.args,
            kwargs=self.kwargs,
            calls=self.calls,
            source=self.source or None,
            name=self.id.removeprefix(f"{self.stage}:"),
        )


class CompiledNotes(BaseModel):
    """The program's torch.compile'd regions as record saw them: the regions (stage:name), the
    graphs dynamo compiled for them (one per frame, more after a graph break or a recompile),
    the recompiles, dynamo's graph breaks (its reason -> how often) and where they are
    (`file:line` -> the reason's first line; files written before it say nothing)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    regions: list[str] = Field(default_factory=list)
    graphs: int = 0
    recompiles: int = 0
    graph_breaks: dict[str, int] = Field(default_factory=dict)
    graph_break_sites: dict[str, str] | None = None


class CudaGraphNote(BaseModel):
    """One CUDA graph the program captured and replayed, as record saw it: where it was
    captured, the calls captured into it per replay (the group id of their shape -> calls),
    its replays and their kernel time, and whether that time was spread over its shapes
    (`attributed`, by their eager time per call) or left as one uncovered line."""

    model_config = ConfigDict(extra="forbid", strict=True)
    number: int
    stage: str
    where: str
    replays: int
    captured: dict[str, int] = Field(default_factory=dict)
    kernel_us: float | None = None
    attributed: bool = False


class Recorded(BaseModel):
    """How a shapes file was recorded (`ncu-classify record`), and what it could not keep."""

    model_config = ConfigDict(extra="forbid", strict=True)
    command: str
    tool_version: str
    torch: str
    device: str
    # older recordings: ops the replay could not take, name -> calls (no stage, no time)
    unreplayable: dict[str, PositiveInt] = Field(default_factory=dict)
    ops: list[RecordedOp] = Field(default_factory=list)  # older recordings' device ops
    totals: RecordedTotals | None = None
    compiled: CompiledNotes | None = None
    cuda_graphs: list[CudaGraphNote] = Field(default_factory=list)
