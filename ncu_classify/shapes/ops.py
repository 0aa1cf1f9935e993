"""The op shapes capture can replay (linear, conv3d, conv2d, cast; attention in `attention`):
each one's parameters as the shapes file gives them, strictly validated, with its stable id,
the FLOPs and bytes it nominally moves, and the inputs its replay draws (as the program laid
them out, where a shape's `layout` says: `layouts`)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core.units import NonNegative
from .layouts import Layouts, layout_tags

Dtype = Literal["bf16", "fp16", "fp32"]
CastTarget = Literal["bf16", "fp16", "fp32", "uint8"]  # video frames leave as uint8
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "uint8": 1}
GROUP_ID = re.compile(r"^[A-Za-z0-9_.:+-]+$")
# One dimension: positive and below 2^40 (no tensor has more elements along one axis), so that
# byte counts stay exact integers and absurd sizes are refused as such.
PositiveInt = Annotated[int, Field(gt=0, lt=2**40)]
Triple = Annotated[list[PositiveInt], Field(min_length=3, max_length=3)]
NonNegTriple = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=3, max_length=3)]
Dims5 = Annotated[list[PositiveInt], Field(min_length=5, max_length=5)]
Dims4 = Annotated[list[PositiveInt], Field(min_length=4, max_length=4)]
Dims2 = Annotated[list[PositiveInt], Field(min_length=2, max_length=2)]
NonNegDims2 = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]
# dims, dtype, scale of one drawn input
InputSpec = tuple[tuple[int, ...], str, float]
CompileMode = Literal["default", "max-autotune-no-cudagraphs"]
# A shape as a shapes file writes it: its fields by their published names, JSON values.
ShapeFields = dict[str, Any]


class OpShape(BaseModel):
    """Fields every shape has: an optional explicit id."""

    # strict: `M: true` or `M: "5"` is an error, not 1 or 5
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)
    name: str | None = Field(default=None, pattern=GROUP_ID.pattern)
    note: str | None = None  # provenance or assumptions; copied into the card
    # How often the recorded model runs this shape per inference (summaries weight by it).
    calls: PositiveInt = 1
    # Where a recorded shape came from: module paths, numbers of repeated blocks as `*`.
    source: str | None = None
    # The real inputs `record --save-inputs` kept (a torch.save'd list), replayed for seeded ones.
    inputs_file: str | None = None
    # The real program's kernel time (us), kernels and their names -> launches (torch.profiler's,
    # <= 160 characters, the 40 most launched) per call, as `record` measured them on a GPU.
    real_us: NonNegative | None = None
    real_kernels: NonNegative | None = None
    real_kernel_names: dict[str, NonNegative] | None = None
    # The calls the recording saw (real_us is per one of them); `calls` may be edited to weigh
    # the summaries (50 denoising steps), coverage sets the recorded ones against the program.
    real_calls: PositiveInt | None = None
    # Replayed as `torch.compile` of the op alone, in this Inductor mode (`try`'s move);
    # max-autotune without CUDA graphs benchmarks Triton GEMM templates against the library.
    compile: CompileMode | None = None

    WRITE_TAIL: ClassVar[tuple[str, ...]] = (  # the shared fields, written after the op's own
        "compile", "note", "calls", "source", "real_calls", "inputs_file", "real_us",
        "real_kernels", "real_kernel_names",
    )  # fmt: skip

    def written(self) -> ShapeFields:
        """The shape as a shapes file holds it: the fields it was given, by their published
        names, `op` and `name` first, then the op's own fields, then `WRITE_TAIL`; so a
        recording written from its models reads as the recorder describes a call."""
        given = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        names = {n: (f.alias or n) for n, f in type(self).model_fields.items()}
        head = [names["op"], names["name"]]
        tail = [names[n] for n in self.WRITE_TAIL]
        own = [a for a in names.values() if a not in head and a not in tail]
        own.sort(key=lambda a: a == "layout")  # a typed shape's layout after its own fields
        return {key: given[key] for key in [*head, *own, *tail] if key in given}

    def key(self) -> str:
        """The op-specific part of the group id."""
        raise NotImplementedError

    def aten_op(self) -> str:
        """The op name written into cards (legacy cards use ATen names)."""
        raise NotImplementedError

    def nominal_flops(self) -> int:
        """Useful multiply-add FLOPs (2 per MAC) the op must do, from its shape alone."""
        raise NotImplementedError

    def nominal_bytes(self) -> int:
        """Fewest bytes the op must move: every input read once, every output written once."""
        raise NotImplementedError

    def inputs(self) -> list[InputSpec]:
        """The seeded random tensors the replay draws, in order: (dims, dtype, scale). Shapes
        with equal inputs share one draw when replayed one after the other."""
        raise NotImplementedError

    def output_bytes(self) -> int:
        """Bytes of what the op allocates on the GPU besides its inputs (outputs, copies)."""
        raise NotImplementedError

    def device_bytes(self) -> int:
        """GPU memory the replay needs at least: every input drawn plus what the op allocates
        (library workspaces come on top)."""
        drawn = sum(math.prod(dims) * DTYPE_BYTES[dtype] for dims, dtype, _ in self.inputs())
        return drawn + self.output_bytes()


class TypedShape(OpShape):
    """A typed op (linear, conv, attention, cast): its inputs are plain tensors of the shape's
    dims (contiguous, or in its memory format) unless `layout` gives, by input name, how the
    program laid one out (`shapes.layouts`); the replay then draws that input's whole storage
    and views it so."""

    layout: Layouts | None = None
    INPUT_NAMES: ClassVar[tuple[str, ...]] = ()  # in the order of `plain_inputs`
    FLATTENED: ClassVar[tuple[str, ...]] = ()  # inputs whose leading dims the op flattens

    @model_validator(mode="after")
    def _layout_fits(self) -> TypedShape:
        names, plain_inputs = self.input_names(), self.plain_inputs()
        plain = dict(zip(names, (dims for dims, _, _ in plain_inputs), strict=True))
        for name, given in (self.layout or {}).items():
            if name not in plain:
                raise ValueError(f"layout.{name}: no such input (inputs: {', '.join(plain)})")
            given.check(name, plain[name], name in self.FLATTENED)
        return self

    def plain_inputs(self) -> list[InputSpec]:
        """The inputs as plain tensors of the shape's dims: (dims, dtype, scale), in order."""
        raise NotImplementedError

    def input_names(self) -> list[str]:
        """The inputs' names, as `layout` keys them, in order."""
        return list(self.INPUT_NAMES[: len(self.plain_inputs())])

    def inputs(self) -> list[InputSpec]:
        """The plain inputs, each with a recorded layout drawn as its whole storage (dims
        (span,)): the replay views that storage as the program's tensor (`replay.layouts`)."""
        layout = self.layout or {}
        return [
            ((layout[name].span(dims),), dtype, scale) if name in layout else (dims, dtype, scale)
            for name, (dims, dtype, scale) in zip(
                self.input_names(), self.plain_inputs(), strict=True
            )
        ]

    def extra_tags(self) -> list[str]:
        """The id's tags for what the shape keeps beyond its plain form (`strided` and a
        digest when it has a layout); none for a plain shape, whose id stays as it was."""
        layout = {k: v.model_dump(exclude_none=True) for k, v in (self.layout or {}).items()}
        return layout_tags({"layout": layout or None}, ["strided"])


class LinearShape(TypedShape):
    """`F.linear(x[M,K], w[N,K], bias[N])`."""

    op: Literal["linear"]
    M: PositiveInt
    N: PositiveInt
    K: PositiveInt
    dtype: Dtype = "bf16"
    bias: bool = False
    allow_tf32: bool = False
    INPUT_NAMES: ClassVar[tuple[str, ...]] = ("x", "weight", "bias")
    FLATTENED: ClassVar[tuple[str, ...]] = ("x", "bias")  # (batch, tokens, K); a (1, N) bias

    def key(self) -> str:
        tags = [self.dtype] + (["tf32"] if self.dtype == "fp32" and self.allow_tf32 else [])
        tags += ["bias"] if self.bias else []
        tags += self.extra_tags()
        return f"linear:M{self.M}_N{self.N}_K{self.K}:" + ":".join(tags)

    def aten_op(self) -> str:
        return "aten.linear.default"

    def nominal_flops(self) -> int:
        return 2 * self.M * self.N * self.K

    def nominal_bytes(self) -> int:
        elems = self.M * self.K + self.N * self.K + self.M * self.N + (self.N if self.bias else 0)
        return elems * DTYPE_BYTES[self.dtype]

    def plain_inputs(self) -> list[InputSpec]:
        specs: list[InputSpec] = [
            ((self.M, self.K), self.dtype, 1.0),
            ((self.N, self.K), self.dtype, self.K**-0.5),
        ]
        return specs + ([((self.N,), self.dtype, 1.0)] if self.bias else [])

    def output_bytes(self) -> int:
        return self.M * self.N * DTYPE_BYTES[self.dtype]


class _Conv(TypedShape):
    """What conv2d and conv3d share: NC + spatial dims, the output arithmetic, the id, the
    FLOPs and bytes. Subclasses fix the number of spatial dims by their field types."""

    input: list[int]
    weight: list[int]
    stride: list[int]
    padding: list[int]
    dilation: list[int]
    groups: PositiveInt = 1
    dtype: Dtype = "fp32"
    allow_tf32: bool = True
    memory_format: str = "contiguous"
    bias: bool = False
    _name: ClassVar[str] = "conv"
    _layout_tag: ClassVar[str] = "cl"
    INPUT_NAMES: ClassVar[tuple[str, ...]] = ("input", "weight", "bias")

    @model_validator(mode="after")
    def _consistent(self) -> _Conv:
        if self.input[1] != self.weight[1] * self.groups:
            raise ValueError(
                f"input channels {self.input[1]} != weight in-channels {self.weight[1]}"
                f" x groups {self.groups}"
            )
        if self.weight[0] % self.groups:
            raise ValueError(f"out channels {self.weight[0]} not divisible by groups {self.groups}")
        if any(d <= 0 for d in self.output()):
            raise ValueError(f"kernel larger than padded input: output would be {self.output()}")
        return self

    def output(self) -> list[int]:
        """Output shape [N, Cout, *spatial] by the usual convolution arithmetic."""
        spatial = [
            (size + 2 * pad - dil * (k - 1) - 1) // st + 1
            for size, k, st, pad, dil in zip(
                self.input[2:], self.weight[2:], self.stride, self.padding, self.dilation,
                strict=False,
            )
        ]  # fmt: skip
        return [self.input[0], self.weight[0], *spatial]

    def key(self) -> str:
        dims = "x".join(map(str, self.input)) + "_w" + "x".join(map(str, self.weight))
        parts = [f"in{dims}"]
        parts += [f"s{'x'.join(map(str, self.stride))}", f"p{'x'.join(map(str, self.padding))}"]
        if any(d != 1 for d in self.dilation):
            parts.append(f"d{'x'.join(map(str, self.dilation))}")
        if self.groups != 1:
            parts.append(f"g{self.groups}")
        tags = [self.dtype] + (["tf32"] if self.dtype == "fp32" and self.allow_tf32 else [])
        tags += [self._layout_tag] if self.memory_format != "contiguous" else []
        tags += ["bias"] if self.bias else []
        tags += self.extra_tags()
        return f"{self._name}:" + "_".join(parts) + ":" + ":".join(tags)

    def aten_op(self) -> str:
        return f"aten.{self._name}.default"

    def nominal_flops(self) -> int:
        kernel_volume = math.prod(self.weight[2:])
        return 2 * math.prod(self.output()) * (self.input[1] // self.groups) * kernel_volume

    def nominal_bytes(self) -> int:
        elems = math.prod(self.input) + math.prod(self.weight) + math.prod(self.output())
        return (elems + (self.weight[0] if self.bias else 0)) * DTYPE_BYTES[self.dtype]

    def plain_inputs(self) -> list[InputSpec]:
        scale = math.prod(self.weight[1:]) ** -0.5
        specs: list[InputSpec] = [
            (tuple(self.input), self.dtype, 1.0),
            (tuple(self.weight), self.dtype, scale),
        ]
        return specs + ([((self.weight[0],), self.dtype, 1.0)] if self.bias else [])

    def output_bytes(self) -> int:
        out = math.prod(self.output()) * DTYPE_BYTES[self.dtype]
        if self.memory_format == "contiguous":  # cuDNN transposes input and output to NHWC
            return 2 * out + math.prod(self.input) * DTYPE_BYTES[self.dtype]
        return out


class Conv3dShape(_Conv):
    """`F.conv3d(input, weight, bias, stride, padding, dilation, groups)` in NCDHW terms."""

    op: Literal["conv3d"]
    input: Dims5
    weight: Dims5
    stride: Triple = [1, 1, 1]
    padding: NonNegTriple = [0, 0, 0]
    dilation: Triple = [1, 1, 1]
    memory_format: Literal["contiguous", "channels_last_3d"] = "contiguous"
    _name: ClassVar[str] = "conv3d"
    _layout_tag: ClassVar[str] = "cl3d"


class Conv2dShape(_Conv):
    """`F.conv2d(...)` in NCHW terms (the Wan VAE's 2-D upsampling convs run per frame)."""

    op: Literal["conv2d"]
    input: Dims4
    weight: Dims4
    stride: Dims2 = [1, 1]
    padding: NonNegDims2 = [0, 0]
    dilation: Dims2 = [1, 1]
    memory_format: Literal["contiguous", "channels_last"] = "contiguous"
    _name: ClassVar[str] = "conv2d"
    _layout_tag: ClassVar[str] = "cl"


class CastShape(TypedShape):
    """`x.to(dtype)`: a pure memory-bound elementwise copy."""

    op: Literal["cast"]
    shape: Annotated[list[PositiveInt], Field(min_length=1)]
    from_: Dtype = Field(alias="from")
    to: CastTarget
    INPUT_NAMES: ClassVar[tuple[str, ...]] = ("x",)

    def key(self) -> str:
        tags = "".join(f":{tag}" for tag in self.extra_tags())
        return f"cast:{'x'.join(map(str, self.shape))}:{self.from_}-{self.to}{tags}"

    def aten_op(self) -> str:
        return "aten.to.dtype"

    def nominal_flops(self) -> int:
        return 0

    def nominal_bytes(self) -> int:
        return math.prod(self.shape) * (DTYPE_BYTES[self.from_] + DTYPE_BYTES[self.to])

    def plain_inputs(self) -> list[InputSpec]:
        return [(tuple(self.shape), self.from_, 1.0)]

    def output_bytes(self) -> int:
        return math.prod(self.shape) * DTYPE_BYTES[self.to]
