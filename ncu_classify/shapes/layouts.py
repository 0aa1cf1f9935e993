"""How a typed shape's tensors were laid out in the program, where not as the shape implies.

A typed shape (linear, conv, attention, cast) implies plain inputs: contiguous, or in its
recorded memory format. A program may hand the op a strided view instead (a frames-first
`x.permute(0, 2, 1, 3, 4)`, a slice with an offset), and the op then launches a copy kernel
first; so a shape keeps, for each such input, its strides and storage offset (`layout:`, by the
input's name), and attention keeps the mask it was given (`mask:`). Absent, as in every file
written before, the inputs are plain and attention is unmasked. Torch-free: the replay builds
the layouts (`replay.layouts`), the ids name them (`layout_tags`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Stride = Annotated[int, Field(ge=0, lt=2**40)]
Size = Annotated[int, Field(gt=0, lt=2**40)]
MaskDtype = Literal["bool", "bf16", "fp16", "fp32"]
MASK_BYTES = {"bool": 1, "bf16": 2, "fp16": 2, "fp32": 4}


def span_of(shape: list[int], strides: list[int], offset: int) -> int:
    """Elements of storage a view of `shape` and `strides` at `offset` reaches."""
    return offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))


class InputLayout(BaseModel):
    """One input as the program's op received it: its strides and storage offset, and its
    dims where the program's view had other dims than the shape names (a linear's input of
    (batch, tokens, K) for M = batch x tokens); the elements are the same."""

    model_config = ConfigDict(extra="forbid", strict=True)
    shape: list[Size] | None = None
    strides: list[Stride]
    offset: Annotated[int, Field(ge=0, lt=2**40)] = 0

    def dims(self, plain: tuple[int, ...]) -> list[int]:
        """The dims the replay's view has: the program's, else the shape's own."""
        return list(self.shape) if self.shape is not None else list(plain)

    def span(self, plain: tuple[int, ...]) -> int:
        """Elements of storage the view reaches (offset included): what the replay draws."""
        return span_of(self.dims(plain), self.strides, self.offset)

    def check(self, name: str, plain: tuple[int, ...], flattened: bool = False) -> None:
        """A ValueError naming the input unless the layout fits the shape's dims: the same
        dims, or, for an input the op `flattened` (a linear's x and bias), dims of the same
        elements and the same last dim (the replay's op gets the dims given)."""
        dims = self.dims(plain)
        if len(dims) != len(self.strides):
            raise ValueError(f"layout.{name}: {len(self.strides)} strides for dims {dims}")
        same = dims == list(plain) or (
            flattened and math.prod(dims) == math.prod(plain) and dims[-1:] == list(plain[-1:])
        )
        if not same:
            raise ValueError(f"layout.{name}: dims {dims} are not the {list(plain)} input's")


class AttentionMask(BaseModel):
    """The `attn_mask` the program passed to SDPA: its dims (broadcast against batch, heads,
    queries, keys), dtype (`bool`: True attends; a float dtype: added to the scores), strides
    (0 where it is broadcast) and storage offset. Its values are not recorded (that would stop
    the program on a GPU): the replay masks the keys from `attended` on (default: the last
    quarter, at least one key attended), every row alike, as a text encoder pads its tokens
    at the end (T5's padding mask)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    shape: Annotated[list[Size], Field(min_length=1, max_length=4)]
    dtype: MaskDtype
    strides: list[Stride]
    offset: Annotated[int, Field(ge=0, lt=2**40)] = 0
    attended: Size | None = None  # keys the replay leaves attended, from the first

    @model_validator(mode="after")
    def _same_rank(self) -> AttentionMask:
        if len(self.shape) != len(self.strides):
            raise ValueError(f"mask shape {self.shape} and strides {self.strides} differ in rank")
        if self.attended is not None and self.attended > self.shape[-1]:
            raise ValueError(f"mask attends {self.attended} of {self.shape[-1]} keys")
        return self

    def keys_attended(self) -> int:
        """Keys left attended by the replay's padding pattern, from the first."""
        keys = self.shape[-1]
        return self.attended if self.attended is not None else max(1, keys - keys // 4)

    def span(self) -> int:
        return span_of(self.shape, self.strides, self.offset)

    def distinct_bytes(self) -> int:
        """Bytes the mask holds once each (a broadcast dimension counts once)."""
        pairs = zip(self.shape, self.strides, strict=True)
        return math.prod(n for n, s in pairs if s != 0) * MASK_BYTES[self.dtype]


Layouts = dict[str, InputLayout]
# The fields a plain shape leaves out: a manifest's shape parameters omit them when absent, so
# that a capture of a plain shape reads as it did before they existed.
PLAIN_WHEN_ABSENT = ("layout", "mask", "dropout_p", "scale", "enable_gqa")


def layout_tags(extras: Mapping[str, object], readable: list[str]) -> list[str]:
    """The id tags of what a shape keeps beyond its plain form: the readable ones (`strided`,
    `mask-bool`, ...) and `h` + a digest of `extras` (two layouts or masks that read alike
    differ); nothing when `extras` holds nothing (the ids of plain shapes stay as they were)."""
    given = {k: v for k, v in extras.items() if v is not None}
    if not given:
        return []
    text = json.dumps(given, sort_keys=True)
    return [*readable, f"h{hashlib.sha256(text.encode()).hexdigest()[:8]}"]
