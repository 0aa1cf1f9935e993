"""A program-wide move measured as one: every shape of a stage changed together (bf16 for
fp32, channels-last for NCDHW/NCHW tensors, or both), as the program would run after the
change, so that the neighbours' dtypes and layouts follow: a conv's input arrives in its
layout, a norm reads half the bytes, a cast that became a no-op is gone. Its saving is the
stage's sum, measured shape by shape against the shapes as recorded, in one capture."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..shapes.aten import AtenShape
from ..shapes.attention import AttentionShape
from ..shapes.file import Shape, ShapeEntry, ShapesFile
from ..shapes.ops import (
    CastShape,
    Conv2dShape,
    Conv3dShape,
    LinearShape,
    ShapeFields,
)

ProgramMove = Literal["bf16", "channels_last", "bf16_channels_last"]
RECORDED_ONLY = ("real_us", "real_kernels", "real_kernel_names", "real_calls", "inputs_file",
                 "name")  # fmt: skip
_SHAPE: TypeAdapter[Shape] = TypeAdapter(Shape)


class ProgramPair(BaseModel):
    """One shape of the stage: its tries group as recorded and changed (None: the change
    removes the op, a cast to the dtype it already has)."""

    model_config = ConfigDict(extra="forbid")
    group: str = Field(description="the shape's group id in the shapes file")
    calls: int
    original: str
    changed: str | None


class ProgramPlan(BaseModel):
    """A program-wide move over the stages named."""

    model_config = ConfigDict(extra="forbid")
    move: ProgramMove
    stages: list[str]
    pairs: list[ProgramPair]
    unchanged: int = Field(description="shapes the move leaves as they are (no time changes)")


def changed_shape(shape: Shape, move: ProgramMove) -> Shape | None:
    """The shape as the program runs it after `move`; the shape itself when the move does not
    touch it; None when the move removes it."""
    fields = {k: v for k, v in shape.written().items() if k not in RECORDED_ONLY}
    bf16, layout = move != "channels_last", move != "bf16"
    if isinstance(shape, (Conv3dShape, Conv2dShape)):
        if bf16 and shape.dtype == "fp32":
            fields.update(dtype="bf16", allow_tf32=False)
        if layout:
            last = "channels_last_3d" if isinstance(shape, Conv3dShape) else "channels_last"
            fields["memory_format"] = last
            fields.pop("layout", None)  # the move's premise: its tensors are channels-last
    elif isinstance(shape, (LinearShape, AttentionShape)) and bf16 and shape.dtype == "fp32":
        fields["dtype"] = "bf16"
        fields.pop("allow_tf32", None)
        if isinstance(fields.get("mask"), dict) and fields["mask"]["dtype"] == "fp32":
            fields["mask"] = {**fields["mask"], "dtype": "bf16"}  # an additive mask follows
    elif isinstance(shape, CastShape) and bf16 and shape.from_ == "fp32":
        if shape.to == "bf16":
            return None  # the tensor is bf16 already: no cast
        fields["from"] = "bf16"
    elif isinstance(shape, AtenShape):
        fields = _aten_changed(fields, bf16, layout)
    changed = _SHAPE.validate_python(fields, strict=False)
    return shape if changed.written() == _without_recorded(shape) else changed


def _without_recorded(shape: Shape) -> ShapeFields:
    return {k: v for k, v in shape.written().items() if k not in RECORDED_ONLY}


def _aten_changed(fields: ShapeFields, bf16: bool, layout: bool) -> ShapeFields:
    """A device op's arguments with float32 tensors (and dtype arguments) as bfloat16, and
    dense 4-D and 5-D tensors in channels-last strides."""
    for key in ("args", "kwargs", "outputs"):
        if key in fields:
            fields[key] = _walk(fields[key], bf16, layout)
    return fields


def _walk(value: Any, bf16: bool, layout: bool) -> Any:
    """Every tensor spec and dtype name inside a recorded argument, changed."""
    if isinstance(value, dict) and set(value) == {"tensor"}:
        return {"tensor": _tensor(dict(value["tensor"]), bf16, layout)}
    if isinstance(value, dict) and {"shape", "dtype", "strides"} <= set(value):
        return _tensor(dict(value), bf16, layout)  # an output spec
    if isinstance(value, dict):
        return {k: _walk(v, bf16, layout) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, bf16, layout) for v in value]
    if bf16 and value == "float32":
        return "bfloat16"
    return value


def _tensor(spec: ShapeFields, bf16: bool, layout: bool) -> ShapeFields:
    """One tensor spec: bfloat16 for float32, channels-last strides for a dense 4-D or 5-D."""
    if bf16 and spec["dtype"] == "float32":
        spec["dtype"] = "bfloat16"
    shape, strides = spec["shape"], spec["strides"]
    if layout and len(shape) in (4, 5) and strides == _row_major(shape) and shape[1] > 1:
        spec["strides"] = _channels_last(shape)
    return spec


def _row_major(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return strides[::-1]


def _channels_last(shape: list[int]) -> list[int]:
    """Strides of N, C, *spatial with the channels innermost (NHWC, NDHWC)."""
    _, c, *spatial = shape
    inner = [c]  # the stride of the last spatial dim is C
    for size in reversed(spatial[1:]):
        inner.append(inner[-1] * max(size, 1))
    spatial_strides = inner[::-1]
    return [c * _prod(spatial), 1, *spatial_strides]


def _prod(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= max(v, 1)
    return out


def plan_program(
    shapes: ShapesFile, stages: list[str], move: ProgramMove
) -> tuple[ProgramPlan, list[str]]:
    """The pairs of every shape of `stages` that the move changes, and the tries shapes file's
    stage lines (`p###.as_recorded`, `p###.<move>`)."""
    pairs: list[ProgramPair] = []
    lines: dict[str, list[str]] = {}
    unchanged = 0
    chosen = [e for e in shapes.entries() if e.stage in stages]
    for number, entry in enumerate(chosen, 1):
        changed = changed_shape(entry.shape, move)
        if changed is entry.shape:
            unchanged += 1
            continue
        pairs.append(_pair(number, entry, changed, move, lines))
    plan = ProgramPlan(move=move, stages=stages, pairs=pairs, unchanged=unchanged)
    return plan, [f"  {json.dumps(s)}:\n" + "\n".join(rows) for s, rows in lines.items()]


def _pair(
    number: int, entry: ShapeEntry, changed: Shape | None, move: str, lines: dict[str, list[str]]
) -> ProgramPair:
    """One changed shape written twice (as recorded, changed) under its stage."""
    calls = entry.shape.calls
    names = (f"p{number:03d}.as_recorded", f"p{number:03d}.{move}")
    shown = [_variant(entry.shape, names[0], calls)]
    shown += [_variant(changed, names[1], calls)] if changed is not None else []
    lines.setdefault(entry.stage, []).extend(f"    - {json.dumps(s.written())}" for s in shown)
    return ProgramPair(
        group=entry.group,
        calls=calls,
        original=f"{entry.stage}:{names[0]}",
        changed=f"{entry.stage}:{names[1]}" if changed is not None else None,
    )


def _variant(shape: Shape, name: str, calls: int) -> Shape:
    """The shape under its tries name, without the recording's own figures."""
    fields = {**_without_recorded(shape), "name": name, "calls": calls}
    return _SHAPE.validate_python(fields, strict=False)
