"""An ATen op as torch.profiler saw it (`record_shapes`), made an `aten` call a replay can
run: the overload (named by the profiler, or the one schema its inputs fit) and each argument
as the recorder writes it (a tensor as shape, dtype and strides, a dtype or memory format by
name). Used for the code a compiled region ran eagerly, which no torch mode sees (`region_ops`).
Scalars and scalar lists come from the kineto event; tensors from the profile's event tree
(dtype, strides and device, tensor lists included: every torch since 2.0), or, without it,
from the event's own shapes and strides (torch >= 2.12: no device, no dtypes in a list).

The profiler keeps less than a dispatch mode: no strings (`pad`'s mode, `div`'s rounding,
which reads as None: an optional string is never taken for None), no list of optional tensors
(`index`), no storage offset (0 is taken), no device (`x.to(device, dtype)` is taken as
`x.to(dtype)`), a Python number only as a 0-d float64 host tensor (`{number: float64}` where
the op's kernels show it was one) or a 0-d int64 one (kept as such: the same kernels). An op
with an argument it lost is not described; its caller or its callees may be."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import torch

from ..shapes.aten import UNKEPT_NUMBER, Keywords

# The profiler's names of tensor dtypes (C++ type names) -> torch's.
TENSOR_DTYPES = {
    "float": "float32", "double": "float64", "c10::Half": "float16",
    "c10::BFloat16": "bfloat16", "long int": "int64", "int": "int32", "short int": "int16",
    "signed char": "int8", "unsigned char": "uint8", "bool": "bool",
    "c10::complex<float>": "complex64", "c10::complex<double>": "complex128",
    "c10::Float8_e4m3fn": "float8_e4m3fn", "c10::Float8_e5m2": "float8_e5m2",
}  # fmt: skip
# c10::ScalarType, MemoryFormat and Layout, as the profiler writes them (their enum values).
SCALAR_TYPES = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
    7: "float64", 9: "complex64", 10: "complex128", 11: "bool", 15: "bfloat16",
    23: "float8_e5m2", 24: "float8_e4m3fn",
}  # fmt: skip
MEMORY_FORMATS = {0: "contiguous_format", 1: "preserve_format", 2: "channels_last",
                  3: "channels_last_3d"}  # fmt: skip
LAYOUTS = {0: "strided"}
HOST_NUMBERS = ("float64", "int64")  # a 0-d tensor of these: a Python number, on the host
SCALARS = ("int", "SymInt", "float", "bool", "number", "Scalar")
LISTED_SCALARS = ("List[int]", "List[SymInt]", "List[float]", "List[bool]")


class _Layout(TypedDict):
    shape: list[int]
    dtype: str
    strides: list[int]
    offset: int


class TensorFields(_Layout, total=False):
    """A tensor argument's fields, as the recorder writes them (`shapes.aten.TensorSpec`)."""

    device: str


class TensorArgument(TypedDict):
    tensor: TensorFields


@dataclass(frozen=True)
class Held:
    """A tensor input as the profile kept it; `dtype` None inside a tensor list of a torch
    whose events name no dtypes there, `host` None where the device is not known."""

    shape: list[int]
    strides: list[int]
    dtype: str | None
    host: bool | None


Input = Held | list[Held] | None  # a tensor, a tensor list, or another argument


@dataclass(frozen=True)
class OpEvent:
    """One ATen op the profiler recorded, with its inputs in schema order: each one's type
    name and value (scalars, scalar lists) from the kineto event, its tensors from the event
    tree (`node`: dtypes, strides and device, in every torch since 2.0) or, without it, from
    the event's own shapes and strides (torch >= 2.12)."""

    name: str  # `aten::cat`
    overload: str  # '' when the profiler did not name it (or it is `default`)
    start: int
    end: int
    dtypes: list[str]
    concrete: list[Any]
    tensors: list[Input]  # empty: the profile kept no tensor layouts

    @classmethod
    def of(cls, event: Any, node: Any = None) -> OpEvent:
        """The op of a kineto event (`profile(record_shapes=True)`) and, where given, its node
        of the event tree; a field this torch's events lack reads empty (the op is then not
        described)."""
        dtypes = list(_field(event, "dtypes") or [])
        tensors = _from_tree(node, len(dtypes)) if node is not None else None
        if tensors is None:
            shapes = list(_field(event, "structured_input_shapes") or [])
            strides = list(_field(event, "structured_input_strides") or [])
            tensors = _from_event(dtypes, shapes, strides)
        return cls(
            event.name(), _field(event, "overload_name") or "", event.start_ns(),
            event.end_ns(), dtypes, list(_field(event, "concrete_inputs") or []), tensors,
        )  # fmt: skip

    def tensor_dtypes(self) -> list[str]:
        """The dtypes (torch's names) of its tensor inputs, in order."""
        return [t.dtype for t in _flat(self.tensors) if t.dtype is not None]

    def on_device(self) -> bool:
        """Whether a tensor input is known to be on the device (not the host)."""
        return any(t.host is False for t in _flat(self.tensors))


def _flat(inputs: list[Input]) -> list[Held]:
    return [t for i in inputs for t in (i if isinstance(i, list) else [i]) if t is not None]


def _from_tree(node: Any, count: int) -> list[Input] | None:
    """The tensor inputs an event-tree node kept (None when they do not line up)."""
    inputs = list(getattr(node.extra_fields, "inputs", None) or [])
    if len(inputs) != count:
        return None
    return [_held_list(i) if isinstance(i, list) else _held(i) for i in inputs]


def _held(value: Any) -> Held | None:
    """A tensor of the event tree (`_TensorMetadata`), else None."""
    if type(value).__name__ != "_TensorMetadata":
        return None
    dtype = str(value.dtype).removeprefix("torch.")
    return Held(list(value.sizes), list(value.strides), dtype, value.device.type == "cpu")


def _held_list(values: list[Any]) -> list[Held] | None:
    held = [_held(v) for v in values]
    return [h for h in held if h is not None] if all(h is not None for h in held) else None


def _from_event(dtypes: list[str], shapes: list[Any], strides: list[Any]) -> list[Input]:
    """The tensor inputs from a kineto event's own shapes and strides (no devices; a tensor
    list's dtypes unknown), empty when this torch's events have none."""
    if not len(shapes) == len(strides) == len(dtypes):
        return []
    found: list[Input] = []
    for kind, shape, stride in zip(dtypes, shapes, strides, strict=True):
        if kind in TENSOR_DTYPES and isinstance(shape, list) and isinstance(stride, list):
            found.append(Held(shape, stride, TENSOR_DTYPES[kind], None))
        elif kind == "TensorList" and isinstance(shape, list) and isinstance(stride, list):
            pairs = zip(shape, stride, strict=False)
            found.append([Held(list(a), list(b), None, None) for a, b in pairs])
        else:
            found.append(None)
    return found


@dataclass(frozen=True)
class ProfiledCall:
    """An op as an `aten` call: overload, positional and keyword arguments, and a note."""

    overload: str
    args: list[Any]
    kwargs: Keywords
    note: str | None = None


class Lost(ValueError):
    """An argument the profiler did not keep: the op cannot be described."""


def described(op: OpEvent, list_dtype: str | None, numbers: bool = False) -> ProfiledCall:
    """The op as an `aten` call, or Lost saying which argument the profile lacks; a tensor
    list's dtype is `list_dtype` when the op has no other tensor to take it from. `numbers`: a
    0-d float64 host tensor was a Python number (the profile keeps a wrapped scalar as one)."""
    base = op.name.removeprefix("aten::")
    packet = getattr(torch.ops.aten, base, None)
    if not op.name.startswith("aten::") or packet is None:
        raise Lost(f"{op.name} is no ATen op")
    cast = _deviceless(op)
    if cast is not None:
        return described(cast, list_dtype, numbers)
    named = op.overload or "default"
    others = [o for o in packet.overloads() if o != named]
    own = op.tensor_dtypes()
    fill = own[0] if own else list_dtype
    problems = []
    for overload in [named, *others] if named in packet.overloads() else others:
        schema = getattr(packet, overload)._schema
        try:
            return _fitted(op, schema, fill, f"aten.{base}.{overload}", numbers)
        except Lost as exc:
            problems.append(str(exc))
    raise Lost(problems[0] if problems else f"{op.name}: no overload takes its inputs")


def _deviceless(op: OpEvent) -> OpEvent | None:
    """`x.to(device, dtype)` (torch makes `x.to(other)` one too) as `x.to(dtype)`, where the
    profile kept the dtype but not the device: a `to` that launches a kernel casts on the
    device its replay runs on (a copy between host and device is a memcpy; a cast with it runs
    on the device). None for any other op."""
    if op.name != "aten::to" or op.overload not in ("device", "") or len(op.dtypes) != 6:
        return None
    if op.dtypes[1] != "" or len(op.concrete) != 6 or op.concrete[2] not in SCALAR_TYPES:
        return None
    tensors = op.tensors[:1] + op.tensors[2:] if op.tensors else []
    dtypes, concrete = op.dtypes[:1] + op.dtypes[2:], op.concrete[:1] + op.concrete[2:]
    return replace(op, overload="dtype", dtypes=dtypes, concrete=concrete, tensors=tensors)


def _fitted(
    op: OpEvent, schema: Any, fill: str | None, overload: str, numbers: bool
) -> ProfiledCall:
    """The op's inputs fitted to one schema's arguments (Lost where they do not fit)."""
    if not len(op.tensors) == len(op.concrete) == len(op.dtypes):
        raise Lost(f"{op.name}: the profile's inputs are incomplete")
    if len(schema.arguments) != len(op.dtypes):
        raise Lost(
            f"{op.name}: {len(op.dtypes)} inputs, not the {len(schema.arguments)} of one schema"
        )
    args: list[Any] = []
    kwargs: Keywords = {}
    guessed, device = False, op.on_device()
    for index, argument in enumerate(schema.arguments):
        kind, held = str(argument.real_type), op.tensors[index]
        where = f"{op.name} argument {argument.name}"
        if isinstance(held, list) and any(t.dtype is None for t in held):
            guessed, held = True, [_filled(t, fill, where) for t in held]
        value = _value(kind, op.dtypes[index], op.concrete[index], held, device, where)
        if numbers and kind == "Tensor" and _host_float(held):
            value = dict(UNKEPT_NUMBER)
        (kwargs.__setitem__(argument.name, value) if argument.kwarg_only else args.append(value))
    note = "its tensor list's dtype is taken from the code beside it (not profiled)"
    return ProfiledCall(overload, args, kwargs, note if guessed else None)


def _host_float(held: Input) -> bool:
    """A 0-d float64 tensor not known to be on the device: a Python number, or a real one."""
    return isinstance(held, Held) and not held.shape and held.dtype == "float64" and (
        held.host is not False
    )  # fmt: skip


def _filled(held: Held, fill: str | None, where: str) -> Held:
    """A tensor of a list whose dtype the profile did not name, given the code's dtype."""
    if fill is None:
        raise Lost(f"{where}: its tensors' dtype is not in the profile")
    return Held(held.shape, held.strides, held.dtype or fill, held.host)


def _value(kind: str, dtype: str, concrete: Any, held: Input, device: bool, where: str) -> Any:
    """One argument of schema type `kind` from what the profiler kept of it (`device`: the op
    has a tensor on the device, so a host tensor is marked as one)."""
    if kind == "Optional[str]":  # no strings are kept: `div`'s "floor" would read as None
        raise Lost(f"{where} ({kind}) is not in the profile")
    if kind.startswith("Optional[") and dtype == "" and concrete is None and held is None:
        return None  # (an optional device too: a factory's device is the replay's own)
    kind = (
        kind.removeprefix("Optional[").removesuffix("]") if kind.startswith("Optional[") else kind
    )
    if kind == "Tensor" and isinstance(held, Held):
        return _tensor(held, device)
    if kind == "List[Tensor]" and isinstance(held, list):
        return [_tensor(t, device) for t in held]
    if kind in SCALARS and dtype == "Scalar" and concrete is not None:
        return {"float": str(concrete)} if _infinite(concrete) else concrete
    if kind in LISTED_SCALARS and dtype == "ScalarList" and isinstance(concrete, list):
        return concrete
    tables = {"ScalarType": SCALAR_TYPES, "MemoryFormat": MEMORY_FORMATS, "Layout": LAYOUTS}
    if kind in tables and dtype == "Scalar" and concrete in tables[kind]:
        return tables[kind][concrete]
    raise Lost(f"{where} ({kind}) is not in the profile")


def _tensor(held: Held, device: bool) -> TensorArgument:
    """A tensor argument as the recorder writes it: on the host (`device: cpu`) when it is
    known to be there in an op that uses the device, or, the device unknown, when it is a
    0-d float64 or int64 (a Python number)."""
    if len(held.shape) != len(held.strides) or held.dtype is None:
        raise Lost(f"a tensor of shape {held.shape!r} and strides {held.strides!r}")
    spec: TensorFields = {
        "shape": held.shape, "dtype": held.dtype, "strides": held.strides, "offset": 0,
    }  # fmt: skip
    host = held.host if held.host is not None else (not held.shape and held.dtype in HOST_NUMBERS)
    if host and (device or held.host is None):
        spec["device"] = "cpu"
    return {"tensor": spec}


def _field(event: Any, *names: str) -> Any:
    """The first of these fields a kineto event has (torch's profiler grew them over time)."""
    for name in names:
        reader = getattr(event, name, None)
        if reader is not None:
            return reader()
    return None


def _infinite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


# ATen ops that are a typed shape's call, with the torch function the recorder sees for it
# (same positional arguments), so that a profiled conv or linear is the shape it is eagerly.
TYPED = {
    "aten.conv3d.default": "conv3d", "aten.conv2d.default": "conv2d",
    "aten.linear.default": "linear",
    "aten.scaled_dot_product_attention.default": "scaled_dot_product_attention",
}  # fmt: skip


def typed(call: ProfiledCall) -> Any:
    """The typed shape (linear, conv, attention, cast) the recorder writes for this call when
    it sees it eagerly, built on meta tensors of the profiled layouts; None for other ops."""
    from torch.nn import functional

    from .calls import shape_of

    args = [meta(value) for value in call.args]
    if call.overload in TYPED:
        func: Any = getattr(functional, TYPED[call.overload])
        kwargs = {key: meta(value) for key, value in call.kwargs.items()}  # sdpa's scale
        return shape_of(func, tuple(args), kwargs, None)[0]
    if call.overload == "aten.to.dtype" and not call.kwargs and isinstance(args[0], torch.Tensor):
        target = getattr(torch, args[1])
        result = torch.empty(args[0].shape, dtype=target, device="meta")
        return shape_of(torch.Tensor.to, (args[0], target), {}, result)[0]
    return None


def meta(value: Any) -> Any:
    """A recorded argument with each tensor made a meta tensor of its layout."""
    if isinstance(value, dict) and "tensor" in value:
        spec = value["tensor"]
        dtype = getattr(torch, spec["dtype"])
        return torch.empty_strided(spec["shape"], spec["strides"], dtype=dtype, device="meta")
    if isinstance(value, list):
        return [meta(v) for v in value]
    return value
