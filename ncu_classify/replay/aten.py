"""Replay of a recorded device op (an `aten` shape): its tensors built with the recorded
shapes, dtypes, strides and storage offsets, its other arguments as recorded, and the op called
through `torch.ops` by its overload name.

Each tensor is a view of a storage drawn from the seed: a block of at most 4 M elements drawn
on the CPU (the same on any machine), repeated on the device up to the length the view reaches;
storages are kept by (seed, position, length, dtype, device) up to a byte budget, so that the
many ops of a stage on tensors of one size draw once. Integer tensors (indices) are drawn
inside the smallest size of the op's first floating-point input, so that an index, gather or
embedding stays in range; booleans are fair coins. The arguments an op writes (in-place ops,
`out=`) are private copies, reset from the drawn storage before every launch, outside the
measured range: no launch sees another's output. An op that cannot be rebuilt says why
(`NotReplayable`), never silently nothing."""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..shapes.aten import UNKEPT_NUMBER, AtenShape, TensorSpec

DTYPES = {name: getattr(torch, name) for name in (
    "float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8",
    "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
)}  # fmt: skip
BLOCK = 1 << 22  # elements drawn on the CPU per storage; longer storages repeat the block


NUMBER_SPEC = {"shape": [], "dtype": "float64", "strides": [], "offset": 0, "device": "cpu"}


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


def index_bound(tensors: list[TensorSpec]) -> int:
    """Exclusive upper bound for drawn integers: the smallest size of the first floating-point
    tensor (an index into any of its dimensions is valid), else 2."""
    for tensor in tensors:
        if tensor.dtype.startswith(("float", "bfloat", "complex")) and tensor.shape:
            return max(1, int(min(tensor.shape)))
    return 2


def drawn_block(seed: int, position: int, length: int, dtype: torch.dtype, bound: int) -> Any:
    """The first `min(length, BLOCK)` elements of a storage, drawn on the CPU."""
    gen = torch.Generator().manual_seed((seed * 1_000_003 + position) % 2**63)
    count = min(length, BLOCK)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(count, generator=gen, dtype=torch.float32).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, (count,), generator=gen).bool()
    return torch.randint(0, bound, (count,), generator=gen, dtype=torch.int64).to(dtype)


class Storages:
    """Drawn storages on their device with the sha256 of what they hold, least recently used
    dropped first beyond `budget` bytes."""

    def __init__(self, budget: int = 8 << 30) -> None:
        self.budget = budget
        self.kept: OrderedDict[tuple[Any, ...], tuple[torch.Tensor, str]] = OrderedDict()

    def get(self, key: tuple[int, int, int, str, int], device: str) -> tuple[torch.Tensor, str]:
        """The storage of (seed, position, length, dtype, bound) on `device`, and its sha256."""
        full = (*key, device)
        if full in self.kept:
            self.kept.move_to_end(full)
            return self.kept[full]
        seed, position, length, dtype_name, bound = key
        block = drawn_block(seed, position, length, DTYPES[dtype_name], bound)
        digest = hashlib.sha256(block.view(torch.uint8).numpy().tobytes())
        digest.update(f"repeated to {length}".encode())
        on_device = block.to(device)
        if length > block.numel():
            on_device = on_device.repeat(math.ceil(length / block.numel()))[:length]
        self.kept[full] = (on_device, digest.hexdigest())
        while sum(t.numel() * t.element_size() for t, _ in self.kept.values()) > self.budget:
            if len(self.kept) == 1:
                break
            self.kept.popitem(last=False)
        return self.kept[full]


@dataclass
class Prepared:
    """A recorded op ready to launch: `run` runs it once; `reset` (for ops that write an
    argument) restores the written tensors; `input_sha256` names the inputs."""

    run: Callable[[], Any]
    reset: Callable[[], None] | None
    input_sha256: str


def prepare(shape: AtenShape, seed: int, device: str, storages: Storages) -> Prepared:
    """Build the op's arguments on `device` (a tensor recorded on the host stays there)."""
    op = resolve(shape.overload)
    written = written_arguments(op)
    bound = index_bound(shape.tensors())
    digest = hashlib.sha256()
    resets: list[tuple[torch.Tensor, torch.Tensor]] = []
    position = [0]

    def build(value: Any, name: str | None) -> Any:
        if isinstance(value, dict) and "tensor" in value:
            spec = TensorSpec.model_validate(value["tensor"])
            if spec.dtype not in DTYPES:
                raise NotReplayable(f"dtype {spec.dtype} is not one the replay draws")
            where = "cpu" if spec.device == "cpu" else device
            integral = not spec.dtype.startswith(("float", "bfloat", "complex"))
            key = (seed, position[0], spec.span(), spec.dtype, bound if integral else 0)
            storage, sha = storages.get(key, where)
            position[0] += 1
            digest.update(f"{sha} {spec.shape} {spec.strides} {spec.offset};".encode())
            if name in written:  # a private copy, reset before each launch
                private = storage.clone()
                resets.append((private, storage))
                storage = private
            return torch.as_strided(storage, spec.shape, spec.strides, spec.offset)
        if isinstance(value, dict) and set(value) == {"float"}:
            return float(value["float"])
        if value == UNKEPT_NUMBER:  # a Python number: drawn as a 0-d host tensor, passed bare
            return float(build({"tensor": NUMBER_SPEC}, None).item())
        if isinstance(value, list):
            return [build(v, name) for v in value]
        if isinstance(value, str) and isinstance(
            getattr(torch, value, None), (torch.dtype, torch.memory_format, torch.layout)
        ):
            return getattr(torch, value)
        if isinstance(value, dict):
            raise NotReplayable(f"an argument this replay does not know: {value!r}")
        return value

    names = argument_names(op, len(shape.args))
    args = [build(a, n) for a, n in zip(shape.args, names, strict=True)]
    kwargs = {k: build(v, k) for k, v in shape.kwargs.items()}
    if "device" in kwargs and kwargs["device"] is None:
        kwargs["device"] = device  # a factory: on the replay's device

    def reset() -> None:
        for private, drawn in resets:
            private.copy_(drawn)

    return Prepared(lambda: op(*args, **kwargs), reset if resets else None, digest.hexdigest())


def argument_names(op: Any, count: int) -> list[str | None]:
    """The schema's names of the first `count` positional arguments (None beyond them)."""
    names: list[str | None] = [a.name for a in op._schema.arguments][:count]
    return names + [None] * (count - len(names))


def written_arguments(op: Any) -> set[str]:
    """The arguments the op writes (`self` of an in-place op, `out`), by schema name."""
    return {
        a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write
    }


def finite(value: Any) -> bool:
    """Whether every floating-point number in a result is finite (a check for tests)."""
    if isinstance(value, torch.Tensor):
        return not value.is_floating_point() or bool(torch.isfinite(value).all())
    if isinstance(value, (list, tuple)):
        return all(finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)
