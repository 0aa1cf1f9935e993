"""The chains a recording found (the shapes file's optional `chains:` section, per stage): runs
of device ops between two heavy ops (a GEMM, a conv, attention) whose tensors flow from one to
the next, each op as its overload and arguments, where a tensor argument is an input of the
chain (`{input: k}`) or an earlier op's output (`{ref: [op, output]}`, rebuilt by `as_strided`
where the op read another view of it). Capture replays shapes, not chains; a chain is replayed
as one function (eagerly, or compiled) by `replay.chain`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..core.units import NonNegative
from .aten import OVERLOAD, ArgumentError, Keywords, TensorSpec, checked_argument
from .ops import GROUP_ID, PositiveInt

Index = Annotated[int, Field(ge=0, lt=2**31)]
# the size arithmetic a dynamic graph does on its symbolic sizes, beside ATen's
# `aten.sym_size.int`: `size.<name>.default` is the function `name` of the module named here
SIZE_FUNCTIONS = {
    **dict.fromkeys(
        ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "eq", "ne", "lt",
         "le", "gt", "ge"), "operator",
    ),
    **dict.fromkeys(("sym_float", "sym_int", "sym_max", "sym_min", "sym_ite", "sym_not",
                     "sym_sum"), "torch"),
    **dict.fromkeys(("floor", "ceil", "trunc"), "math"),
}  # fmt: skip


class ChainInput(BaseModel):
    """A tensor the chain takes from outside: its layout, where the recording saw it come
    from (a heavy shape's group id, another chain's op, `parameter`, `program input`, ...)
    and, for a 0-d one, the value the program passed when the replay passes it too (a Python
    float dynamo lifted into a host tensor: a norm's scale); else its values are drawn.
    `dynamic`: the dims whose size was symbolic in the program's graph (a graph dynamo
    recompiled with dynamic sizes), symbolic in the replay's compile too: Inductor's kernels
    for symbolic sizes are other kernels than for the same sizes known."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    tensor: TensorSpec
    origins: list[str] = Field(default_factory=list, alias="from")
    value: bool | int | float | None = Field(default=None, exclude_if=lambda v: v is None)
    dynamic: list[Index] = Field(default_factory=list, exclude_if=lambda dims: not dims)

    @model_validator(mode="after")
    def _value_of_a_scalar(self) -> ChainInput:
        """A value only for a 0-d tensor (one number); dynamic dims are the tensor's."""
        if self.value is not None and self.tensor.shape:
            raise ValueError(f"a value for a tensor of shape {self.tensor.shape}: 0-d only")
        outside = [d for d in self.dynamic if d >= len(self.tensor.shape)]
        if outside:
            raise ValueError(f"dynamic dim {outside[0]} of a {len(self.tensor.shape)}-d tensor")
        return self


class ChainOp(BaseModel):
    """One op of a chain: `torch.ops.<overload>(*args, **kwargs)`, with what it returned and
    the `aten` shape of the stage that stands for it (`shape`), when there is one. A size op
    of a dynamic graph (`aten.sym_size.int`, or `size.<name>.default`: arithmetic on sizes)
    returns a number, `value` (what it was in the program), its one output (`ref: [op, 0]`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    overload: str = Field(pattern=OVERLOAD)
    args: list[Any] = Field(default_factory=list)
    kwargs: Keywords = Field(default_factory=dict)
    outputs: list[TensorSpec] = Field(default_factory=list)
    shape: str | None = None
    value: bool | int | float | None = Field(default=None, exclude_if=lambda v: v is None)

    @field_validator("overload", mode="after")
    @classmethod
    def _size_function_known(cls, overload: str) -> str:
        """`size.<name>.default` names one of the size functions, nothing else."""
        namespace, name, variant = overload.split(".")
        if namespace == "size" and name not in SIZE_FUNCTIONS:
            raise ValueError(f"{overload}: no size function ({', '.join(sorted(SIZE_FUNCTIONS))})")
        if namespace == "size" and variant != "default":
            raise ValueError(f"{overload}: a size function is size.{name}.default")
        return overload

    @model_validator(mode="after")
    def _a_number_or_tensors(self) -> ChainOp:
        """A size op returns a number; a size function no tensor."""
        if self.value is not None and self.outputs:
            raise ValueError("a size op (value) returns a number, not tensors (outputs)")
        if self.overload.startswith("size.") and self.value is None:
            raise ValueError(f"{self.overload}: a size function has a value")
        return self

    @property
    def computes_size(self) -> bool:
        """Whether the op computes a size (a number), not tensors."""
        return self.value is not None

    @field_validator("args", mode="after")
    @classmethod
    def _args_known(cls, args: list[Any]) -> list[Any]:
        return [_checked(value, (index,)) for index, value in enumerate(args)]

    @field_validator("kwargs", mode="after")
    @classmethod
    def _kwargs_known(cls, kwargs: Keywords) -> Keywords:
        return {key: _checked(value, (key,)) for key, value in kwargs.items()}


def _checked(value: Any, inner: tuple[str | int, ...]) -> Any:
    """An argument of a chain op: a link (`{input: k}`, `{ref: [op, output]}` with an optional
    `as_strided: {shape, strides, offset}`), or what an `aten` shape's argument may be."""
    if isinstance(value, dict) and set(value) == {"input"}:
        if not isinstance(value["input"], int) or value["input"] < 0:
            raise ArgumentError(inner, f"{value!r}: an input is a number").for_pydantic()
        return value
    if isinstance(value, dict) and set(value) in ({"ref"}, {"ref", "as_strided"}):
        ref = value["ref"]
        if not (isinstance(ref, list) and len(ref) == 2 and all(isinstance(r, int) for r in ref)):
            raise ArgumentError(inner, f"{value!r}: a ref is [op, output]").for_pydantic()
        if "as_strided" in value:
            view = value["as_strided"]
            if not isinstance(view, dict) or set(view) != {"shape", "strides", "offset"}:
                problem = "as_strided is {shape, strides, offset}"
                raise ArgumentError((*inner, "as_strided"), problem).for_pydantic()
            try:
                View.model_validate(view)
            except ValueError as exc:  # pydantic's ValidationError, or View's own check
                problem = f"as_strided {view!r}: {_first_error(exc)}"
                raise ArgumentError((*inner, "as_strided"), problem).for_pydantic() from None
        return value
    if isinstance(value, list):
        return [_checked(item, (*inner, number)) for number, item in enumerate(value)]
    if isinstance(value, dict) and set(value) == {"tensor"}:
        problem = "a chain's tensor is an input ({input: k}) or an op's output ({ref: [op, out]})"
        raise ArgumentError(inner, problem).for_pydantic()
    try:
        return checked_argument(value, inner)
    except ArgumentError as exc:
        raise exc.for_pydantic() from None


def links(value: Any) -> list[Any]:
    """The links (`{input: k}`, `{ref: ...}`) inside an argument, in order."""
    if isinstance(value, dict) and ("input" in value or "ref" in value):
        return [value]
    if isinstance(value, list):
        return [link for item in value for link in links(item)]
    if isinstance(value, dict):
        return [link for item in value.values() for link in links(item)]
    return []


class View(BaseModel):
    """A view of a tensor's storage: sizes, strides and storage offset, in elements."""

    model_config = ConfigDict(extra="forbid", strict=True)
    shape: list[Index]
    strides: list[int]
    offset: Index

    @model_validator(mode="after")
    def _a_stride_per_dim(self) -> View:
        """A stride per size (a hand-edited view would fail only at replay, on the GPU)."""
        if len(self.strides) != len(self.shape):
            raise ValueError(f"{len(self.shape)} sizes but {len(self.strides)} strides")
        return self


def _first_error(exc: ValueError) -> str:
    """A validation error's first message, without pydantic's framing."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        return f"{where}: {message}" if where else message
    return str(exc)


class ChainOutput(BaseModel):
    """An op's output that leaves the chain (read by a heavy op or a later op, or the last);
    `as_strided`: the view its reader took, when another view of the output's storage (the
    whole buffer whose halves the chain wrote through slices)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    ref: Annotated[list[Index], Field(min_length=2, max_length=2)]
    as_strided: View | None = Field(default=None, exclude_if=lambda view: view is None)


class Chain(BaseModel):
    """One distinct chain of a stage, with its calls (identical chains merge), the program's
    kernel time per call (`real_us`: its ops' summed, when the recording was timed), the heavy
    shapes it sits between (`after`: those that made its inputs; `before`: those that read its
    outputs) and, when the recording could not tie it together, why (`untied`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(pattern=GROUP_ID.pattern)
    calls: PositiveInt
    source: str | None = None
    after: list[str] = Field(default_factory=list)
    before: list[str] = Field(default_factory=list)
    real_us: NonNegative | None = None
    real_kernels: NonNegative | None = None
    untied: list[str] = Field(default_factory=list)
    inputs: list[ChainInput] = Field(default_factory=list)
    ops: list[ChainOp] = Field(default_factory=list)
    outputs: list[ChainOutput] = Field(default_factory=list)

    @model_validator(mode="after")
    def _links_valid(self) -> Chain:
        """Every link names an input of the chain or an output of an earlier op."""
        if not self.ops and not self.untied:
            raise ValueError("a chain without ops must say why (untied)")
        for number, op in enumerate(self.ops):
            for link in links([op.args, op.kwargs]):
                self._check(link, number, f"ops.{number}")
        for output in self.outputs:
            self._check({"ref": output.ref}, len(self.ops), "outputs")
        return self

    def _check(self, link: Any, before: int, where: str) -> None:
        if "input" in link and link["input"] >= len(self.inputs):
            raise ValueError(f"{where}: input {link['input']} of {len(self.inputs)}")
        if "ref" in link:
            op, out = link["ref"]
            made = len(self.ops[op].outputs) if 0 <= op < before else 0
            made += 0 <= op < before and self.ops[op].computes_size
            if not 0 <= op < before or not 0 <= out < made:
                raise ValueError(f"{where}: ref {link['ref']} names no earlier op's output")
