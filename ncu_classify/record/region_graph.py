"""What the recorder keeps of a graph dynamo handed its backend: the layouts of its inputs
(`InputLayout`; `region_trace` traces the graph again to ATen ops on them, a chain), what
names a region (its module, its function), whether a graph is dynamic, the recorder's modes
and hooks set aside around a region's call, dynamo's graph breaks, and dynamo's skipped
frames left to it again when the recording ends."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class InputLayout:
    """One argument the program passed to a compiled graph: a tensor's layout, or a number."""

    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    offset: int = 0
    dtype: torch.dtype | None = None  # None: a number (`value`)
    device: str = "cpu"
    value: int | float | bool | None = None
    constant: int | float | bool | None = None  # a one-element host tensor's value


def layouts(example_inputs: Sequence[Any]) -> list[InputLayout]:
    """The layouts of a graph's example inputs (a symbolic size as the value it had)."""
    found = []
    for value in example_inputs:
        if isinstance(value, torch.Tensor):
            found.append(
                InputLayout(
                    tuple(int(n) for n in value.shape), tuple(int(s) for s in value.stride()),
                    int(value.storage_offset()), value.dtype, value.device.type,
                    constant=_host_scalar(value),
                )
            )  # fmt: skip
        else:
            hint = getattr(getattr(value, "node", None), "hint", value)
            found.append(InputLayout(value=hint if isinstance(hint, (int, float, bool)) else None))
    return found


def _host_scalar(tensor: torch.Tensor) -> int | float | bool | None:
    """The value of a one-element tensor on the host (dynamo lifts a Python float the graph
    reads, such as a norm's scale, into one under dynamic shapes); None for any other."""
    from torch._subclasses.fake_tensor import FakeTensor

    if tensor.numel() != 1 or tensor.device.type != "cpu" or isinstance(tensor, FakeTensor):
        return None
    try:
        value = tensor.item()
    except (RuntimeError, ValueError):  # a tensor without data (meta, functional)
        return None
    return value if isinstance(value, (int, float, bool)) else None


def symbolic(value: Any) -> bool:
    """A symbolic size: a SymInt, or a tensor with one in its shape (a dynamic graph's input)."""
    if isinstance(value, torch.Tensor):
        return any(isinstance(n, torch.SymInt) for n in (*value.shape, *value.stride()))
    return isinstance(value, (torch.SymInt, torch.SymFloat))


def module_of(model: Any) -> torch.nn.Module | None:
    """The module a compiled callable belongs to: itself, or a bound method's owner."""
    if isinstance(model, torch.nn.Module):
        return model
    owner = getattr(model, "__self__", None)
    return owner if isinstance(owner, torch.nn.Module) else None


def function_name(model: Any, path: str) -> str:
    """A compiled function's region name: its qualified name, under the module calling it."""
    name = getattr(model, "__qualname__", None) or type(model).__name__
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    return f"{path}.{name}" if path else name


def unskipped(before: int) -> None:
    """The frames dynamo saw during the recording that it compiled nothing for, left to it
    again: a function compiled before the recording (the Python API) ran eagerly under the
    recorder's modes, and dynamo marks such a frame to run eagerly for good."""
    from torch._C._dynamo.eval_frame import reset_code
    from torch._dynamo.convert_frame import input_codes
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    for seen in input_codes.seen[before:]:
        code = seen()
        if code is not None and not _debug_get_cache_entry_list(code):
            reset_code(code)


def dynamo_breaks() -> dict[str, int]:
    """dynamo's graph breaks so far, reason -> count: its `graph_break` counter (explicit
    breaks, calls it cannot trace) and its `unimplemented` one (a data-dependent branch)."""
    from torch._dynamo.utils import counters

    found = dict(counters["graph_break"])
    for reason, count in counters["unimplemented"].items():
        found[reason] = max(found.get(reason, 0), count)
    return found


def new_breaks(now: dict[str, int], before: dict[str, int]) -> list[tuple[str, int]]:
    """The graph breaks dynamo counted since `before`: (its reason on one line, without
    addresses, so that two recordings are identical; how many)."""
    found = []
    for reason, count in now.items():
        if (new := count - before.get(reason, 0)) > 0:
            found.append((re.sub(r" at 0x[0-9a-fA-F]+", "", " ".join(reason.split()))[:300], new))
    return found


def notes(graphs: list[Any], recompiles: int, breaks: dict[str, int], sites: dict[str, str]) -> Any:
    """The shapes file's `recorded.compiled`: the regions (`stage:region`), dynamo's graphs (a
    graph's other sizes and callers are not graphs of their own), recompiles, graph breaks."""
    from ..shapes.recorded import CompiledNotes

    return CompiledNotes(
        regions=sorted({f"{g.stage}:{g.region}" for g in graphs}),
        graphs=sum(1 for g in graphs if not (g.sizes or g.caller)), recompiles=recompiles,
        graph_breaks=breaks, graph_break_sites=dict(sorted(sites.items())) or None,
    )  # fmt: skip


Options = dict[str, str | int | bool | Callable[..., Any]]  # torch.compile's `options`


def split_options(settings: Any) -> tuple[Any, Options | None]:
    """The program's torch.compile `options` as Inductor's and torch's own: its guard filter,
    which torch takes out of them for dynamo (the recorder's compile passes it on; it was lost),
    and `use_aoti` (left out, as before); both popped from the dict, as torch pops them."""
    if not isinstance(settings, dict):
        return settings, None
    guard, _ = settings.pop("guard_filter_fn", None), settings.pop("use_aoti", None)
    return dict(settings) or None, ({"guard_filter_fn": guard} if guard is not None else None)


def plain_options(options: Any) -> dict[str, str | int | float | bool] | None:
    """The program's Inductor options as a shapes file keeps them (plain values only: others,
    such as a callable, are left out), for the replay to compile with."""
    if not isinstance(options, dict) or not options:
        return None
    plain = (str, int, float, bool)
    return {str(k): v for k, v in sorted(options.items()) if isinstance(v, plain)} or None


@contextmanager
def suspended_modes(rec: Any) -> Iterator[bool]:
    """The recorder's modes and global hooks set aside around a compiled region's call, so that
    dynamo compiles and runs what it would without them (False: a program's mode is above)."""
    from torch.overrides import _get_current_function_mode, _pop_mode_temporarily
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    from torch.utils._python_dispatch import _pop_mode_temporarily as pop_dispatch

    ours = (
        _get_current_function_mode() is rec._mode  # type: ignore[no-untyped-call]
        and _get_current_dispatch_mode() is rec.device_ops._mode
    )
    if not ours:
        yield False
        return
    hooks = torch.nn.modules.module
    kept = [
        (table, handle.id, table.pop(handle.id))
        for handle in rec._handles
        for table in (hooks._global_forward_pre_hooks, hooks._global_forward_hooks)
        if handle.id in table
    ]
    try:
        with pop_dispatch(), _pop_mode_temporarily():
            yield True
    finally:
        for table, number, hook in kept:
            table[number] = hook
