"""What a projected cards file carries beside its cards (`ncu-classify project`): at file level
the model, its assumptions, the source and target GPUs with the table's figures used, and the
kernels it could not project; per kernel the rule used and the factor applied to its time.
Models only: `cards.projection` computes them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .gpus import GpuSpec


class KernelProjection(BaseModel):
    """How one kernel's time was projected, or why it was not."""

    model_config = ConfigDict(extra="forbid")
    rule: str | None = Field(
        description="compute, sm_throughput, dram, l2, l1, waves or latency (see the file's"
        " projection.rules); null: not projected (see why)"
    )
    factor: float | None = Field(description="projected time / measured time")
    source_us: float | None = Field(description="the kernel's measured time on the source GPU")
    floor: str | None = Field(
        default=None,
        description="the target roof that lifted the rule's time (the kernel cannot run faster"
        " than its work at that level over the target's peak)",
    )
    why: str | None = Field(default=None, description="why it was not projected")


class Unprojected(BaseModel):
    """A kernel the model could not project, named."""

    model_config = ConfigDict(extra="forbid")
    group: str
    kernel: str
    why: str


class Projection(BaseModel):
    """The file is a projection, not a measurement: of which file, from and to which GPU, by
    which model."""

    model_config = ConfigDict(extra="forbid")
    measured: str = Field(
        description="the cards file projected, named as `inputs` are (the same from any folder)"
    )
    source: str = Field(description="the GPU table's key of the GPU the cards were measured on")
    target: str = Field(description="the GPU table's key of the GPU projected onto")
    source_gpu: GpuSpec = Field(description="the table's figures used for the source")
    target_gpu: GpuSpec = Field(description="the table's figures used for the target")
    model: str
    rules: dict[str, str] = Field(description="rule -> how it scales a kernel's time")
    assumptions: list[str]
    kernels: int = Field(description="kernels in the file")
    projected_kernels: int
    unprojected: list[Unprojected] = Field(
        default_factory=list, description="kernels not projected, with why: listed, not guessed"
    )

    def line(self) -> str:
        """The line every view of a projected file shows first."""
        missing = len(self.unprojected)
        return (
            f"projected: onto {self.target} from {self.source} cards ({self.measured}): a model,"
            f" not a measurement; {self.projected_kernels} of {self.kernels} kernels projected"
            + (f", {missing} not (the file's projection.unprojected says why)" if missing else "")
        )
