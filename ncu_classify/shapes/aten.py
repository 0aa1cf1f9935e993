"""A recorded device op as a shape capture replays: the ATen overload the dispatcher ran (an
elementwise op, a norm, a copy, a reduction, an index op), every argument as data (each tensor
as shape, dtype, strides, storage offset), and what the call returned.

Its group id is readable (`vae:aten.mul.Tensor:1x128x161x120x176:fp32:strided`); its nominal
work is the compulsory traffic (every input element read once, every output element written
once) and no FLOPs, since a generic op has no FLOP model."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .ops import InputSpec, OpShape

WRITE_ONLY_FIRST = frozenset({"copy_", "fill_", "zero_", "uniform_", "normal_", "random_"})

# Bytes per element of the dtypes a recording names (torch's names, without `torch.`).
ITEMSIZE = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "complex64": 8, "complex128": 16,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
    "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip
SHORT_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}
Extent = Annotated[int, Field(ge=0, lt=2**40)]
OVERLOAD = r"^[A-Za-z0-9_]+\.[A-Za-z0-9_]+\.[A-Za-z0-9_]+$"
# A Python number (a wrapped scalar) whose value the profile did not keep: the replay passes a
# drawn one, so that type promotion is the program's (`mask * 0.5` is float32, not float64).
UNKEPT_NUMBER = {"number": "float64"}
# An op's keyword arguments as recorded: any op's, so open (each value checked as an argument).
Keywords = dict[str, Any]


class TensorSpec(BaseModel):
    """One tensor argument as recorded: shape, dtype, strides and storage offset (a strided
    view launches another kernel than a contiguous tensor); `device: cpu` marks a host tensor
    in a device op (a 0-d scalar)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    shape: list[Extent]
    dtype: Literal[
        "float64", "float32", "float16", "bfloat16", "complex64", "complex128", "int64",
        "int32", "int16", "int8", "uint8", "bool", "float8_e4m3fn", "float8_e5m2",
    ]  # fmt: skip
    strides: list[Annotated[int, Field(ge=0, lt=2**40)]]
    offset: Extent = 0
    device: Literal["cpu"] | None = None

    @model_validator(mode="after")
    def _same_rank(self) -> TensorSpec:
        if len(self.shape) != len(self.strides):
            raise ValueError(f"shape {self.shape} and strides {self.strides} differ in rank")
        return self

    def span(self) -> int:
        """Elements of storage the view reaches (offset included)."""
        if 0 in self.shape:
            return self.offset
        reach = sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))
        return self.offset + 1 + reach

    def distinct_elements(self) -> int:
        """Elements the view holds once each: a broadcast (stride 0) dimension counts once."""
        pairs = zip(self.shape, self.strides, strict=True)
        return math.prod(n for n, s in pairs if s != 0 or n == 0)

    def distinct_bytes(self) -> int:
        return self.distinct_elements() * ITEMSIZE[self.dtype]

    def is_broadcast(self) -> bool:
        """An expanded tensor: a dimension of more than one element with stride 0."""
        return any(n > 1 and s == 0 for n, s in zip(self.shape, self.strides, strict=True))

    def is_dense(self) -> bool:
        """Row-major contiguous (size-1 dimensions may have any stride)."""
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def tensor_specs(value: Any) -> list[TensorSpec]:
    """The tensors inside a recorded argument (`{"tensor": {...}}`, lists of them), in order."""
    if isinstance(value, dict) and "tensor" in value:
        return [TensorSpec.model_validate(value["tensor"])]
    if isinstance(value, list):
        return [t for v in value for t in tensor_specs(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensor_specs(v)]
    return []


class ArgumentError(ValueError):
    """A recorded argument the replay cannot take, with where inside the argument list."""

    def __init__(self, inner: tuple[str | int, ...], problem: str) -> None:
        super().__init__(problem)
        self.inner, self.problem = inner, problem

    def for_pydantic(self) -> PydanticCustomError:
        """The error pydantic reports at the field, pointing inside it (`core.errors`)."""
        return PydanticCustomError("argument", "{problem}", {"inner": self.inner,
                                                             "problem": self.problem})  # fmt: skip


def checked_argument(value: Any, inner: tuple[str | int, ...]) -> Any:
    """A recorded argument as the replay takes it, or an ArgumentError naming where inside it
    the problem is: a tensor is exactly `{tensor: {...}}` (a valid TensorSpec), a non-finite
    float `{float: -inf}` (a YAML `-.inf` is turned into that: JSON, which carries the argument
    to the replay, has no such number), a Python number whose value was not kept `{number:
    float64}` (read from a profile), lists item by item, other scalars as they are."""
    if isinstance(value, dict):
        if set(value) == {"tensor"}:
            try:
                TensorSpec.model_validate(value["tensor"])
            except ValidationError as exc:
                first = exc.errors()[0]
                raise ArgumentError((*inner, "tensor", *first["loc"]), first["msg"]) from None
            return value
        if set(value) == {"float"} and value["float"] in ("inf", "-inf", "nan"):
            return value
        if value == UNKEPT_NUMBER:
            return value
        raise ArgumentError(
            inner,
            f"{value!r} is no argument the replay knows (a tensor is {{tensor: ...}},"
            " a non-finite float {float: -inf}, a number not kept {number: float64})",
        )
    if isinstance(value, list):
        return [checked_argument(item, (*inner, index)) for index, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": str(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ArgumentError(inner, f"{value!r} is no argument the replay knows")


class AtenShape(OpShape):
    """`torch.ops.<overload>(*args, **kwargs)` with the recorded arguments."""

    op: Literal["aten"]
    overload: str = Field(pattern=OVERLOAD)
    args: list[Any] = Field(default_factory=list)
    kwargs: Keywords = Field(default_factory=dict)
    outputs: list[TensorSpec] = Field(default_factory=list)
    _tensors: list[TensorSpec] = PrivateAttr(default_factory=list)

    @field_validator("args", mode="after")
    @classmethod
    def _args_known(cls, args: list[Any]) -> list[Any]:
        try:
            return [checked_argument(value, (index,)) for index, value in enumerate(args)]
        except ArgumentError as exc:
            raise exc.for_pydantic() from None

    @field_validator("kwargs", mode="after")
    @classmethod
    def _kwargs_known(cls, kwargs: Keywords) -> Keywords:
        try:
            return {key: checked_argument(value, (key,)) for key, value in kwargs.items()}
        except ArgumentError as exc:
            raise exc.for_pydantic() from None

    @field_validator("inputs_file", mode="after")
    @classmethod
    def _no_inputs_file(cls, given: str | None) -> str | None:
        if given is not None:
            raise ValueError(
                "recorded inputs are not kept for device ops: their storages are drawn"
            )
        return given

    @model_validator(mode="after")
    def _tensors_valid(self) -> AtenShape:
        self._tensors = tensor_specs(self.args) + tensor_specs(self.kwargs)
        return self

    def tensors(self) -> list[TensorSpec]:
        """Every tensor argument, in order (positional, then keyword)."""
        return list(self._tensors)

    def readable(self) -> str:
        """`aten.mul.Tensor:1x128x161x120x176:fp32:strided`: the overload, the first tensor's
        dims and dtype, `strided` when an input is a non-contiguous view and `broadcast` when
        one is expanded."""
        parts = [self.overload]
        tensors = self.tensors()
        if tensors:
            first = tensors[0]
            parts.append("x".join(map(str, first.shape)) or "scalar")
            parts.append(SHORT_DTYPE.get(first.dtype, first.dtype))
            if any(not t.is_dense() and not t.is_broadcast() for t in tensors):
                parts.append("strided")
            if any(t.is_broadcast() for t in tensors):
                parts.append("broadcast")
        return ":".join(parts)

    def key(self) -> str:
        """The readable id and a digest of the whole call (two calls that read alike differ)."""
        text = json.dumps([self.overload, self.args, self.kwargs], sort_keys=True)
        return f"{self.readable()}:h{hashlib.sha256(text.encode()).hexdigest()[:8]}"

    def aten_op(self) -> str:
        return self.overload

    def nominal_flops(self) -> int:
        return 0  # a generic op has no FLOP model; its bound is the bytes it must move

    def nominal_bytes(self) -> int:
        """Inputs read once and outputs written once. A `*_like` or `new_*` factory reads only
        its input's shape (zeros_like of 9.6 MB moves 9.6 MB, not 19.2); copy_, fill_ and the
        in-place random fills write their first argument without reading it."""
        name = self.overload.split(".")[1] if "." in self.overload else self.overload
        read = self.tensors()
        if name.endswith("_like") or name.startswith("new_"):
            read = []
        elif name in WRITE_ONLY_FIRST:
            read = read[1:]
        return sum(t.distinct_bytes() for t in [*read, *self.outputs])

    def inputs(self) -> list[InputSpec]:
        """The storages the replay draws: one per tensor argument, as long as its view reaches."""
        return [((t.span(),), t.dtype, 1.0) for t in self.tensors()]

    def output_bytes(self) -> int:
        return sum(t.span() * ITEMSIZE[t.dtype] for t in self.outputs)

    def device_bytes(self) -> int:
        """Every storage drawn, twice for safety (an in-place op works on a copy), plus the
        outputs."""
        drawn = sum(t.span() * ITEMSIZE[t.dtype] for t in self.tensors())
        return 2 * drawn + self.output_bytes()


def aten_nominal_bytes(params: dict[str, Any], stored: int) -> int:
    """A recorded op's nominal bytes from its shape parameters as this version counts them;
    `stored` (its manifest's) where they do not describe one."""
    fields = {k: params[k] for k in ("overload", "args", "kwargs", "outputs") if k in params}
    try:
        return AtenShape.model_validate({"op": "aten", **fields}).nominal_bytes()
    except (ValidationError, ValueError, TypeError):
        return stored
