"""Every op that does work on the device, seen where kernels are chosen: a TorchDispatchMode
beside the function-level recorder. Each distinct call is one `aten` shape: the op overload,
every tensor input's shape, dtype, strides and storage offset (a strided view launches another
kernel than a contiguous tensor), the other arguments, what it returned, and how often it ran.
The ops a typed shape (linear, conv, attention, cast) already stands for are left to that
shape; views and ops that only allocate or read metadata do no work and are not listed; ops
whose work depends on the values (a boolean mask, `nonzero`) are listed as not covered, with
the reason, since a replay on other values would do other work."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .calls import CallKwargs
from .shapes_document import CallShape
from .timing import KernelClock

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
# Ops whose output size, and so whose work, depends on the values of their inputs.
DATA_DEPENDENT = frozenset(
    {"nonzero", "nonzero_static", "masked_select", "unique_consecutive", "unique_dim",
     "_unique", "_unique2", "bincount", "masked_scatter"}
)  # fmt: skip
MASK_INDEXED = frozenset({"index", "index_put", "index_put_", "_index_put_impl_"})


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
    kwargs: CallKwargs
    outputs: list[dict[str, Any]]
    on_host: bool  # every tensor on the CPU: host work when the program uses a GPU
    calls: int = 0
    sources: list[str] = field(default_factory=list)
    why_not: str | None = None  # set when a replay would not do the same work


@dataclass
class Seen:
    """One dispatched call, held until the torch call around it says whether it counts."""

    op: str
    args: list[Any]
    kwargs: CallKwargs
    outputs: list[dict[str, Any]]
    on_host: bool
    mark: int


def op_name(func: Any) -> str:
    """`aten.mul.Tensor` for the overload `torch.ops.aten.mul.Tensor`."""
    return f"{func.namespace}.{func._schema.name.split('::')[-1]}.{func._overloadname}"


def does_work(func: Any) -> bool:
    """Whether the op may launch a kernel: not a view, not a metadata or allocation op."""
    return not getattr(func, "is_view", False) and op_name(func) not in NO_WORK


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors inside an argument or result (lists and tuples searched), in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_in(v)]
    return []


def touches_tensors(args: tuple[Any, ...], kwargs: CallKwargs, result: Any) -> bool:
    """Whether an op takes or makes a tensor: one that does neither (a library's version probe,
    `torchvision._cuda_version`, dispatched at import) is no device work."""
    return bool(tensors_in(list(args)) or tensors_in(list(kwargs.values())) or tensors_in(result))


def described(value: Any, mark_host: bool = False) -> Any:
    """An argument as data: a tensor as its shape, dtype, strides and storage offset (and
    `device: cpu` for a host tensor in an op that also uses the GPU, `mark_host`), a list item
    by item, a dtype or memory format by name; a device is left to the replay."""
    if isinstance(value, torch.Tensor):
        spec = {
            "shape": list(value.shape),
            "dtype": str(value.dtype).removeprefix("torch."),
            "strides": list(value.stride()),
            "offset": value.storage_offset(),
        }
        if mark_host and value.device.type == "cpu":
            spec["device"] = "cpu"
        return {"tensor": spec}
    if isinstance(value, (list, tuple)):
        return [described(v, mark_host) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": str(value)}  # inf, -inf, nan: JSON and YAML have no such number
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, torch.device):
        return None
    return str(value).removeprefix("torch.")


def why_not_replayed(op: str, args: list[Any]) -> str | None:
    """Why a replay of this call would not do the program's work, or None."""
    base = op.split(".")[1]
    if base in DATA_DEPENDENT:
        return "its output size depends on the values of its inputs"
    if base in MASK_INDEXED and "'dtype': 'bool'" in str(args[1:]):
        return "a boolean-mask index: the work depends on how many values are true"
    return None


class DeviceOps:
    """The distinct device ops of a recording, in first-seen order. The function-level
    recorder opens a `call` around each torch function: what it dispatches is kept only if
    the call is not a typed shape (which stands for its kernels) nor model building."""

    def __init__(self, where: Callable[[], tuple[str, str]], clock: KernelClock) -> None:
        self.where = where  # -> (stage, module path) of the code running now
        self.clock = clock
        self.ops: dict[str, DeviceOp] = {}
        # calls not kept (failed, beyond the cap): (stage, name) -> calls
        self.failed: dict[tuple[str, str], int] = {}
        self._pending: list[list[Seen]] = []
        self._mode = _Dispatch(self)
        self.stopped = False  # the recording ended (maybe from another thread): keep nothing
        self.flow: Any = None  # the dataflow (`dataflow.Dataflow`), when chains are recorded

    def __enter__(self) -> DeviceOps:
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)

    def open_call(self, func: Any = None, args: tuple[Any, ...] = (),
                  kwargs: CallKwargs | None = None) -> None:  # fmt: skip
        """A torch call (`func`) starts: what it dispatches waits for its verdict."""
        self._pending.append([])
        if self.flow is not None:
            self._flow_call("open", func, args, kwargs)

    def close_call(self, keep: bool, heavy: str | None = None, setup: bool = False) -> None:
        """The torch call around the pending ops ended: keep them (`keep`), or leave them to
        the typed shape or the model building that stands for them; the dataflow folds a
        typed heavy call's ops (`heavy`: its shape's key) into one."""
        if self.flow is not None:
            self._flow_call("close", heavy, setup)
        for seen in self._pending.pop():
            if keep:
                self._add(seen)
            else:  # the typed shape or the model building around it stands for its kernels
                self.clock.aim(seen.mark, None)

    def _flow_call(self, name: str, *args: Any) -> None:
        """Hand the dataflow a torch call's start or end; should it fail, it stops (its
        chains say so) and the recording goes on without it."""
        try:
            getattr(self.flow, name)(*args)
        except Exception as exc:  # recording must never break the user's model
            self.flow.stop(f"{name}: {type(exc).__name__}: {exc}"[:200])
            self.flow = None

    def saw(self, func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any,
            mark: int) -> Seen | None:  # fmt: skip
        """One dispatched op that may do work: held for the torch call around it, if any
        (and returned, for the dataflow)."""
        tensors = tensors_in([list(args), list(kwargs.values()), result])
        if all(t.numel() == 0 for t in tensors):
            return None  # empty tensors: no work (its mark says nothing: its parent's target)
        kinds = {t.device.type for t in tensors}
        mixed = len(kinds) > 1
        seen = Seen(
            op_name(func),
            described(list(args), mixed),
            {k: described(v, mixed) for k, v in kwargs.items()},
            [described(t)["tensor"] for t in tensors_in(result)],
            kinds == {"cpu"},
            mark,
        )
        if self._pending:
            self._pending[-1].append(seen)
        else:
            self._add(seen)
        return seen

    def sources(self, args: tuple[Any, ...], kwargs: CallKwargs) -> list[Any] | None:
        """Where the op's tensors come from, before it runs (None without a dataflow)."""
        if self.flow is None:
            return None
        if self.flow.light is not None:
            return []  # (inside a heavy call: it reads its arguments, not its ops')
        try:
            return list(self.flow.sources(args, kwargs))
        except Exception:  # recording must never break the user's model
            return None

    def follow(self, func: Any, args: tuple[Any, ...], kwargs: CallKwargs, result: Any,
               sources: list[Any] | None, mark: int, seen: Seen | None) -> None:  # fmt: skip
        """One op into the dataflow; one it cannot follow makes tensors of no known origin."""
        if self.flow is None:
            return
        try:
            if sources is None:
                raise ValueError("no sources")
            self.flow.op(func, args, kwargs, result, sources, mark, seen)
        except Exception:  # recording must never break the user's model: said in the chain
            with contextlib.suppress(Exception):
                self.flow.failed(result, op_name(func))

    def failed_call(self, name: str, mark: int) -> None:
        """A call the recorder could not describe: counted, and its kernels left uncovered."""
        stage, _ = self.where()
        self.failed[(stage, name)] = self.failed.get((stage, name), 0) + 1
        self.clock.aim(mark, ("uncovered", stage, name, "the recorder could not describe it"))

    def _add(self, seen: Seen) -> None:
        stage, path = self.where()
        key = json.dumps([stage, seen.op, seen.args, seen.kwargs], sort_keys=True, default=str)
        entry = self.ops.get(key)
        if entry is None and len(self.ops) >= MAX_DISTINCT:
            name = f"{seen.op} (a distinct call beyond the {MAX_DISTINCT} a recording keeps)"
            self.failed[(stage, name)] = self.failed.get((stage, name), 0) + 1
            self.clock.aim(seen.mark, ("uncovered", stage, name, "beyond the recording's cap"))
            return
        if entry is None:
            entry = DeviceOp(stage, seen.op, seen.args, seen.kwargs, seen.outputs, seen.on_host)
            entry.why_not = why_not_replayed(seen.op, seen.args)
            self.ops[key] = entry
        entry.calls += 1
        source = re.sub(r"\.\d+(?=\.|$)", ".*", path) or "(no module)"
        if source not in entry.sources:
            entry.sources.append(source)
        self.clock.aim(seen.mark, ("op", key))

    def device_work(self) -> dict[str, DeviceOp]:
        """The ops that did device work: all of them, unless the program used a GPU; then
        those that touched it (an op on CPU tensors alone is host work)."""
        if all(op.on_host for op in self.ops.values()):
            return dict(self.ops)
        return {key: op for key, op in self.ops.items() if not op.on_host}

    @staticmethod
    def shape_of(op: DeviceOp) -> CallShape:
        """The op as a shapes-file mapping (an `aten` shape; its name is given later)."""
        shape: CallShape = {"op": "aten", "overload": op.op, "args": op.args}
        if op.kwargs:
            shape["kwargs"] = op.kwargs
        if op.outputs:
            shape["outputs"] = op.outputs
        return {**shape, "calls": op.calls, "source": ", ".join(op.sources)}


class _Dispatch(TorchDispatchMode):
    """Hands every dispatched op that may do work to `DeviceOps`, after it ran, inside a mark
    of the kernel clock (so its kernels are its own)."""

    def __init__(self, ops: DeviceOps) -> None:
        super().__init__()
        self.ops = ops

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: CallKwargs | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if self.ops.stopped:
            return func(*args, **kwargs)
        sources = self.ops.sources(args, kwargs)
        if not does_work(func):
            result = func(*args, **kwargs)
            self.ops.follow(func, args, kwargs, result, sources, -1, None)
            return result
        mark = self.ops.clock.begin()
        try:
            result = func(*args, **kwargs)
        finally:
            self.ops.clock.end(mark)
        seen = None
        try:
            if touches_tensors(args, kwargs, result):
                seen = self.ops.saw(func, args, kwargs, result, mark)
        except Exception as exc:  # recording must never break the user's model: counted
            self.ops.failed_call(f"(record failed: {func}: {type(exc).__name__})", mark)
        self.ops.follow(func, args, kwargs, result, sources, mark, seen)
        return result
