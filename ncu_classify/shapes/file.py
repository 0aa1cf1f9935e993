"""The shapes file: which op shapes to replay, by stage, each with a stable human-readable id
(the op shapes themselves are in `ops`)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core.errors import ShapesError
from ..core.textio import decode_text, read_bytes
from ..core.yamlio import MAX_YAML_BYTES, validate_yaml
from .aten import AtenShape
from .attention import AttentionShape
from .chain_shape import ChainShape, CompiledShape
from .chains import Chain
from .ops import (
    CastShape,
    Conv2dShape,
    Conv3dShape,
    LinearShape,
    OpShape,
)
from .recorded import Recorded, StageName

Shape = Annotated[
    LinearShape
    | Conv3dShape
    | Conv2dShape
    | AttentionShape
    | CastShape
    | AtenShape
    | ChainShape
    | CompiledShape,
    Field(discriminator="op"),
]


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
    # the chains of device ops a recording found, per stage (`shapes.chains`): not replayed
    # by capture (its shapes stand for their ops), replayed as one function by `replay.chain`
    chains: dict[StageName, list[Chain]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_ids(self) -> ShapesFile:
        seen: set[str] = set()
        for entry in self.entries():
            if entry.group in seen:
                raise ValueError(f"stages.{entry.stage}: duplicate group id {entry.group!r}")
            seen.add(entry.group)
        return self

    def entries(self) -> list[ShapeEntry]:
        """Every shape with its stage and group id, in file order; the device ops an older
        recording listed under `recorded.ops` follow, as `aten` shapes of their stages."""
        listed = [(stage, shape) for stage, shapes in self.stages.items() for shape in shapes]
        listed += [(op.stage, op.as_shape()) for op in (self.recorded.ops if self.recorded else [])]
        return [
            ShapeEntry(stage=stage, group=group_id(stage, shape), shape=shape)
            for stage, shape in listed
        ]


class ShapeEntry(BaseModel):
    """One shape to replay: where it belongs and the id its NVTX range and card carry."""

    stage: str
    group: str
    shape: Shape


def group_id(stage: str, shape: OpShape) -> str:
    """Stable id `stage:op:params:tags`, or `stage:name` when the file names the shape."""
    if shape.name:
        return f"{stage}:{shape.name}"
    compiled = {None: "", "default": ":compiled"}.get(shape.compile, f":compiled-{shape.compile}")
    return f"{stage}:{shape.key()}{compiled}"


def load_shapes(path: Path) -> ShapesFile:
    """Read and validate a shapes file; errors name the file, YAML line and field."""
    return validate_yaml(path, ShapesFile, ShapesError)


def read_shapes(path: Path) -> tuple[ShapesFile, str]:
    """A shapes file read once: the validated file and the sha256 of its bytes (what a
    capture's manifest records, so that --resume knows the file again)."""
    data = read_bytes(path, ShapesError, MAX_YAML_BYTES)
    shapes = validate_yaml(path, ShapesFile, ShapesError, decode_text(path, data, ShapesError))
    return shapes, hashlib.sha256(data).hexdigest()
