"""Replay of a recorded device op (`recorded.ops` of a shapes file): its tensors built with the
recorded shapes, dtypes, strides and storage offsets from a seeded CPU generator, its other
arguments as recorded, and the op called through `torch.ops` by its overload name.

Integer tensors (indices) are drawn inside the smallest size of the op's first floating-point
input, so that an index, gather or embedding stays in range; booleans are fair coins. An
in-place op gets fresh inputs for each launch (`fresh`), built outside the measured range. An
op that cannot be rebuilt says why (`NotReplayable`), never silently nothing. Not yet wired
into capture: issue 17."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

DTYPES = {name: getattr(torch, name) for name in (
    "float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8",
    "bool", "complex64",
)}  # fmt: skip


class NotReplayable(Exception):
    """The recorded op cannot be rebuilt here (an unknown overload or dtype, an argument this
    builder does not know); the message says which."""


def resolve(name: str) -> Any:
    """`torch.ops.aten.mul.Tensor` for `aten.mul.Tensor`."""
    namespace, op, overload = name.split(".", 2) if name.count(".") >= 2 else (name, "", "")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), op), overload)
    except (AttributeError, RuntimeError) as exc:
        raise NotReplayable(f"{name}: no such op overload in torch {torch.__version__}") from exc


def _bound(args: list[Any], kwargs: dict[str, Any]) -> int:
    """Exclusive upper bound for drawn integers: the smallest size of the first floating-point
    tensor (an index into any of its dimensions is valid), else 2."""
    for tensor in tensors_of([*args, *kwargs.values()]):
        if tensor["dtype"].startswith(("float", "bfloat", "complex")) and tensor["shape"]:
            return max(1, int(min(tensor["shape"])))
    return 2


def tensors_of(value: Any) -> list[dict[str, Any]]:
    """The tensor descriptions inside a recorded argument, in order."""
    if isinstance(value, dict) and "tensor" in value:
        return [value["tensor"]]
    if isinstance(value, list):
        return [t for v in value for t in tensors_of(v)]
    return []


def build_tensor(
    spec: dict[str, Any], gen: torch.Generator, bound: int, device: str
) -> torch.Tensor:
    """A tensor with the recorded shape, dtype, strides and storage offset, its whole storage
    drawn from `gen` on the CPU, then moved to `device` keeping the layout."""
    dtype = DTYPES.get(spec["dtype"])
    if dtype is None:
        raise NotReplayable(f"dtype {spec['dtype']} is not one the replay draws")
    shape, strides, offset = spec["shape"], spec["strides"], spec["offset"]
    if any(s < 0 for s in strides) or offset < 0:
        raise NotReplayable(f"negative strides or offset {strides}, {offset}")
    span = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if n > 0)
    if 0 in shape:
        span = offset
    if dtype.is_floating_point or dtype.is_complex:
        storage = torch.randn(span, generator=gen, dtype=torch.float32).to(dtype)
    elif dtype == torch.bool:
        storage = torch.randint(0, 2, (span,), generator=gen).bool()
    else:
        storage = torch.randint(0, bound, (span,), generator=gen, dtype=torch.int64).to(dtype)
    base = storage.to(device)
    return torch.as_strided(base, shape, strides, offset)


def build_value(value: Any, gen: torch.Generator, bound: int, device: str) -> Any:
    """A recorded argument made real: tensors built, lists item by item, `{"float": "-inf"}`
    back to the float, dtype and memory-format names back to torch's objects."""
    if isinstance(value, dict) and "tensor" in value:
        return build_tensor(value["tensor"], gen, bound, device)
    if isinstance(value, dict) and set(value) == {"float"}:
        return float(value["float"])
    if isinstance(value, list):
        return [build_value(v, gen, bound, device) for v in value]
    if isinstance(value, str) and isinstance(
        getattr(torch, value, None), (torch.dtype, torch.memory_format, torch.layout)
    ):
        return getattr(torch, value)
    if isinstance(value, dict):
        raise NotReplayable(f"an argument this replay does not know: {value!r}")
    return value


def prepare(
    name: str, args: list[Any], kwargs: dict[str, Any], seed: int, device: str
) -> Callable[[], Callable[[], Any]]:
    """`fresh()`: a new set of inputs (drawn again from `seed`: the same values each time) and
    the launch that runs the op on them. Building happens in `fresh`, outside the measured
    range; an in-place op thus never sees its own output."""
    op = resolve(name)
    bound = _bound(args, kwargs)

    def fresh() -> Callable[[], Any]:
        gen = torch.Generator().manual_seed(seed)
        built_args = [build_value(a, gen, bound, device) for a in args]
        built_kwargs = {k: build_value(v, gen, bound, device) for k, v in kwargs.items()}
        if "device" in built_kwargs and built_kwargs["device"] is None:
            built_kwargs["device"] = device  # a factory: on the replay's device
        return lambda: op(*built_args, **built_kwargs)

    return fresh


def finite(value: Any) -> bool:
    """Whether every floating-point number in a result is finite (a check for tests)."""
    if isinstance(value, torch.Tensor):
        return not value.is_floating_point() or bool(torch.isfinite(value).all())
    if isinstance(value, (list, tuple)):
        return all(finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)
