"""Every op that does work on the device, seen where kernels are chosen: a TorchDispatchMode
beside the function-level recorder. Each distinct call is the op overload, every tensor input's
shape, dtype, strides and storage offset (a strided view launches another kernel than a
contiguous tensor), the other arguments, and how often it ran. The ops a typed shape (linear,
conv, attention, cast) already stands for are left to that shape; views and ops that only
allocate or read metadata do no work and are not listed."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..capture.replay_ops import tensors_of

# Ops that allocate, alias or read metadata: no kernel of their own.
NO_WORK = frozenset(
    {
        "aten.empty.memory_format",
        "aten.empty_strided.default",
        "aten.empty_like.default",
        "aten.new_empty.default",
        "aten.new_empty_strided.default",
        "aten._local_scalar_dense.default",
        "aten.lift_fresh.default",
        "aten._unsafe_view.default",
        "aten.detach.default",
        "aten.alias.default",
        "aten.resize_.default",
        "aten.is_nonzero.default",
        "aten.sym_size.int",
        "aten.sym_stride.int",
        "aten.sym_numel.default",
        "aten.sym_storage_offset.default",
    }
)


# Distinct ops kept with their arguments (about 430 bytes each in the shapes file, whose reader
# takes 2 MiB); the calls of further distinct ops (a model whose shapes never repeat) are counted
# by op name instead, and said so.
MAX_DISTINCT = 2000


@dataclass
class DeviceOp:
    """One distinct op call of one stage, and how often it ran."""

    stage: str
    op: str
    args: list[Any]
    kwargs: dict[str, Any]
    calls: int = 0
    sources: list[str] = field(default_factory=list)


def op_name(func: Any) -> str:
    """`aten.mul.Tensor` for the overload `torch.ops.aten.mul.Tensor`."""
    return f"{func.namespace}.{func._schema.name.split('::')[-1]}.{func._overloadname}"


def does_work(func: Any) -> bool:
    """Whether the op may launch a kernel: not a view, not a metadata or allocation op."""
    return not getattr(func, "is_view", False) and op_name(func) not in NO_WORK


def touches_tensors(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> bool:
    """Whether an op takes or makes a tensor: one that does neither (a library's version probe,
    `torchvision._cuda_version`, dispatched at import) is no device work."""

    def holds(value: Any) -> bool:
        if isinstance(value, torch.Tensor):
            return True
        return isinstance(value, (list, tuple)) and any(holds(v) for v in value)

    return holds(list(args)) or holds(list(kwargs.values())) or holds(result)


def described(value: Any) -> Any:
    """An argument as data: a tensor as its shape, dtype, strides and storage offset, a list
    item by item, a dtype or memory format by name; a device is left to the replay."""
    if isinstance(value, torch.Tensor):
        return {
            "tensor": {
                "shape": list(value.shape),
                "dtype": str(value.dtype).removeprefix("torch."),
                "strides": list(value.stride()),
                "offset": value.storage_offset(),
            }
        }
    if isinstance(value, (list, tuple)):
        return [described(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": str(value)}  # inf, -inf, nan: JSON and YAML have no such number
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, torch.device):
        return None
    return str(value).removeprefix("torch.")


def is_broadcast(tensor: dict[str, Any]) -> bool:
    """An expanded tensor: a dimension of more than one element with stride 0."""
    return any(
        size > 1 and stride == 0
        for size, stride in zip(tensor["shape"], tensor["strides"], strict=True)
    )


def is_dense(tensor: dict[str, Any]) -> bool:
    """Row-major contiguous (size-1 dimensions may have any stride)."""
    expected = 1
    for size, stride in zip(reversed(tensor["shape"]), reversed(tensor["strides"]), strict=True):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def readable_id(op: DeviceOp) -> str:
    """`vae:aten.mul.Tensor:1x128x161x120x176:fp32:strided`: stage, op, the first tensor's
    dims and dtype, `strided` when an input is a non-contiguous view (a channels-last
    `movedim`, a slice) and `broadcast` when one is expanded (stride 0)."""
    tensors = tensors_of(op.args) + tensors_of(list(op.kwargs.values()))
    parts = [op.stage, op.op]
    if tensors:
        first = tensors[0]
        parts.append("x".join(map(str, first["shape"])) or "scalar")
        parts.append(_SHORT.get(first["dtype"], first["dtype"]))
        if any(not is_dense(t) and not is_broadcast(t) for t in tensors):
            parts.append("strided")
        if any(is_broadcast(t) for t in tensors):
            parts.append("broadcast")
    return ":".join(parts)


_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}


class DeviceOps:
    """The distinct device ops of a recording, in first-seen order. The function-level
    recorder opens a `call` around each torch function: what it dispatches is kept only if
    the call is not a typed shape (which stands for its kernels) nor model building."""

    def __init__(self, where: Callable[[], tuple[str, str]]) -> None:
        self.where = where  # -> (stage, module path) of the code running now
        self.ops: dict[str, DeviceOp] = {}
        self.failed: dict[str, int] = {}  # ops not kept (failed, beyond the cap): name -> calls
        self._pending: list[list[tuple[str, list[Any], dict[str, Any]]]] = []
        self._mode = _Dispatch(self)

    def __enter__(self) -> DeviceOps:
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)

    def open_call(self) -> None:
        self._pending.append([])

    def close_call(self, keep: bool) -> None:
        seen = self._pending.pop()
        if keep:
            for item in seen:
                self._add(*item)

    def saw(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """One dispatched op that may do work: held for the torch call around it, if any."""
        item = (op_name(func), described(list(args)), {k: described(v) for k, v in kwargs.items()})
        if self._pending:
            self._pending[-1].append(item)
        else:
            self._add(*item)

    def _add(self, op: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        stage, path = self.where()
        key = json.dumps([stage, op, args, kwargs], sort_keys=True, default=str)
        entry = self.ops.get(key)
        if entry is None and len(self.ops) >= MAX_DISTINCT:
            name = f"{op} (a distinct call beyond the {MAX_DISTINCT} recorded.ops keeps)"
            self.failed[name] = self.failed.get(name, 0) + 1
            return
        if entry is None:
            entry = self.ops[key] = DeviceOp(stage, op, args, kwargs)
        entry.calls += 1
        source = re.sub(r"\.\d+(?=\.|$)", ".*", path) or "(no module)"
        if source not in entry.sources:
            entry.sources.append(source)

    def document(self) -> list[dict[str, Any]]:
        """The ops as the shapes file lists them (`recorded.ops`), each with a readable id
        (numbered where two calls would share one)."""
        out, taken = [], set()
        for op in self.ops.values():
            base = readable_id(op)
            ident, n = base, 1
            while ident in taken:
                n += 1
                ident = f"{base}:{n}"
            taken.add(ident)
            out.append(
                {
                    "id": ident,
                    "stage": op.stage,
                    "op": op.op,
                    "args": op.args,
                    "kwargs": op.kwargs,
                    "calls": op.calls,
                    "source": ", ".join(op.sources),
                }
            )
        return out


class _Dispatch(TorchDispatchMode):
    """Hands every dispatched op that may do work to `DeviceOps`, after it ran."""

    def __init__(self, ops: DeviceOps) -> None:
        super().__init__()
        self.ops = ops

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        try:
            if does_work(func) and touches_tensors(args, kwargs, result):
                self.ops.saw(func, args, kwargs)
        except Exception as exc:  # recording must never break the user's model: counted
            name = f"(record failed: {func}: {type(exc).__name__})"
            self.ops.failed[name] = self.ops.failed.get(name, 0) + 1
        return result
