"""The shapes file: which op shapes to replay, by stage, each with a stable human-readable id
(the op shapes themselves are in `ops`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core.errors import ShapesError
from ..core.yamlio import validate_yaml
from .ops import OpShape, PositiveInt, Shape

StageName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_]+$")]


class RecordedOp(BaseModel):
    """One distinct device op the recording saw beside the typed shapes (an elementwise op, a
    norm, a copy): the op overload, its arguments as data (each tensor as shape, dtype, strides,
    storage offset), how often it ran and where. Listed for coverage; not replayed yet."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    stage: StageName
    op: str
    args: list[Any]
    kwargs: dict[str, Any] = Field(default_factory=dict)
    calls: PositiveInt
    source: str = ""


class Recorded(BaseModel):
    """How a shapes file was recorded (`ncu-classify record`), and what it could not keep."""

    model_config = ConfigDict(extra="forbid", strict=True)
    command: str
    tool_version: str
    torch: str
    device: str
    # ops the model ran that the replay cannot: name -> calls (views and free ops not counted)
    unreplayable: dict[str, PositiveInt] = Field(default_factory=dict)
    ops: list[RecordedOp] = Field(default_factory=list)  # every other device op, distinct calls


class ShapesFile(BaseModel):
    """A whole shapes file: replay settings and the shapes of each stage, in order."""

    model_config = ConfigDict(extra="forbid", strict=True)
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0  # torch.Generator takes a 64-bit seed
    warmup: Annotated[int, Field(ge=1, le=1000)] = 3
    cudnn_benchmark: bool = False
    recorded: Recorded | None = None
    stages: Annotated[
        dict[StageName, Annotated[list[Shape], Field(min_length=1)]], Field(min_length=1)
    ]

    @model_validator(mode="after")
    def _unique_ids(self) -> ShapesFile:
        seen: dict[str, str] = {}
        for stage, shapes in self.stages.items():
            for index, shape in enumerate(shapes):
                gid = group_id(stage, shape)
                if gid in seen:
                    raise ValueError(f"stages.{stage}.{index}: duplicate group id {gid!r}")
                seen[gid] = stage
        return self

    def entries(self) -> list[ShapeEntry]:
        """Every shape with its stage and group id, in file order."""
        return [
            ShapeEntry(stage=stage, group=group_id(stage, shape), shape=shape)
            for stage, shapes in self.stages.items()
            for shape in shapes
        ]


class ShapeEntry(BaseModel):
    """One shape to replay: where it belongs and the id its NVTX range and card carry."""

    stage: str
    group: str
    shape: Shape


def group_id(stage: str, shape: OpShape) -> str:
    """Stable id `stage:op:params:tags`, or `stage:name` when the file names the shape."""
    return f"{stage}:{shape.name}" if shape.name else f"{stage}:{shape.key()}"


def load_shapes(path: Path) -> ShapesFile:
    """Read and validate a shapes file; errors name the file, YAML line and field."""
    return validate_yaml(path, ShapesFile, ShapesError)
