"""A compiled region's graph as the ops of a chain (`shapes.chains.Chain`): the FX graph that
dynamo handed its backend, traced again to ATen ops (`make_fx`) on fake tensors of the
layouts the program passed, so that capture replays it as one function compiled by Inductor,
as the program ran it, and the user sees which ops it holds. Traced after the program ran,
outside dynamo's compile (tracing inside would add guards to dynamo's shape environment).
Also what names a region (its module, its function), tells a dynamic graph's inputs, sets the
recorder's modes and hooks aside around a region's call, and leaves dynamo's skipped frames to
it again when the recording ends."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from ..shapes.aten import TensorSpec
from ..shapes.chains import Chain, ChainInput, ChainOp, ChainOutput

DTYPE_NAMES = {
    torch.float64: "float64", torch.float32: "float32", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.complex64: "complex64", torch.complex128: "complex128",
    torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8",
    torch.uint8: "uint8", torch.bool: "bool",
}  # fmt: skip
Link = dict[str, int | list[int]]  # {"input": k} or {"ref": [op, output]}: a chain's links


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


def constants_folded(graph: torch.fx.GraphModule, inputs: list[InputLayout]) -> Any:
    """A copy of the graph in which every `.item()` of an input holding a known host scalar
    is that number (fake tensors have no values to read, so tracing it would fail); the
    graph as it is when there is none."""
    import copy

    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    known = {
        node.name: layout.constant
        for node, layout in zip(placeholders, inputs, strict=False)
        if layout.constant is not None
        and any(u.op == "call_method" and u.target == "item" for u in node.users)
    }
    if not known:
        return graph
    folded = copy.deepcopy(graph.graph)
    for node in [n for n in folded.nodes if n.op == "placeholder" and n.name in known]:
        for item in [u for u in node.users if u.op == "call_method" and u.target == "item"]:
            for use in list(item.users):
                swap = lambda n, item=item, v=known[node.name]: v if n is item else n  # noqa: E731
                use.args = torch.fx.node.map_arg(use.args, swap)
                use.kwargs = torch.fx.node.map_arg(use.kwargs, swap)
            folded.erase_node(item)
    return torch.fx.GraphModule(graph, folded)


def traced_chain(
    graph: torch.fx.GraphModule, inputs: list[InputLayout], name: str, calls: int
) -> Chain:
    """The graph as a chain (shapes.chains), traced to ATen ops on fake tensors; ValueError
    names what cannot be one."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    with FakeTensorMode(allow_non_fake_inputs=True):
        args = [
            torch.empty_strided(i.shape, i.strides, dtype=i.dtype, device=i.device)
            if i.dtype is not None
            else i.value
            for i in inputs
        ]
        traced = make_fx(constants_folded(graph, inputs), tracing_mode="real")(*args)
    return _as_chain(traced, name, calls)


def _as_chain(traced: torch.fx.GraphModule, name: str, calls: int) -> Chain:
    """The traced graph's nodes as chain ops: placeholders are inputs, as are the constant
    tensors tracing lifted (`get_attr`: its values drawn, as an input's), getitem an output
    index."""
    links: dict[torch.fx.Node, Link] = {}
    inputs: list[ChainInput] = []
    ops: list[ChainOp] = []
    outputs: list[ChainOutput] = []
    for node in traced.graph.nodes:
        value = node.meta.get("val")
        if node.op == "get_attr":  # a tensor made in the region (`torch.tensor([...])`): drawn
            value = _attribute(traced, str(node.target))
        if node.op in ("placeholder", "get_attr"):
            if isinstance(value, torch.Tensor):
                links[node] = {"input": len(inputs)}
                origin = "compiled region " + ("input" if node.op == "placeholder" else "constant")
                inputs.append(ChainInput(tensor=_spec(value), origins=[origin]))
        elif node.op == "call_function" and node.target is operator.getitem:
            source = links.get(node.args[0], {}).get("ref")
            if isinstance(source, list):
                links[node] = {"ref": [source[0], int(node.args[1])]}
        elif node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            made = value if isinstance(value, (list, tuple)) else [value]
            specs = [_spec(t) for t in made if isinstance(t, torch.Tensor)]
            args = [_argument(a, links) for a in node.args]
            kwargs = {k: _argument(v, links) for k, v in node.kwargs.items()}
            links[node] = {"ref": [len(ops), 0]}
            ops.append(
                ChainOp(overload=_overload(node.target), args=args, kwargs=kwargs, outputs=specs)
            )
        elif node.op == "output":
            refs = [links[n].get("ref") for n in _nodes(node.args[0]) if n in links]
            outputs = [ChainOutput(ref=list(r)) for r in refs if isinstance(r, list)]
        else:
            raise ValueError(f"{node.op} {node.target}: not an ATen op")
    return Chain(name=name, calls=calls, inputs=inputs, ops=ops, outputs=outputs)


def _attribute(traced: torch.fx.GraphModule, target: str) -> Any:
    """A `get_attr` node's value: the constant tensor tracing lifted (None for another)."""
    value: Any = traced
    for name in target.split("."):
        value = getattr(value, name, None)
    return value


def _overload(target: torch._ops.OpOverload) -> str:
    """`aten.mm.default`."""
    return f"{target.namespace}.{target._schema.name.split('::')[-1]}.{target._overloadname}"


def _nodes(value: Any) -> list[torch.fx.Node]:
    if isinstance(value, torch.fx.Node):
        return [value]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in _nodes(v)]
    return []


def _argument(value: Any, links: dict[torch.fx.Node, Link]) -> Any:
    """One argument in the chain grammar: a link, a number, a name (dtype, layout, memory
    format), a list; a device is the replay's (None)."""
    if isinstance(value, torch.fx.Node):
        if value not in links:
            raise ValueError(f"{value.name}: not a tensor the chain holds")
        return links[value]
    if isinstance(value, (list, tuple)):
        return [_argument(v, links) for v in value]
    if isinstance(value, torch.dtype):
        return DTYPE_NAMES.get(value, str(value).removeprefix("torch."))
    if isinstance(value, (torch.layout, torch.memory_format)):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.device):
        return None
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return {"float": str(value)}
    return value


def _spec(tensor: torch.Tensor) -> TensorSpec:
    """A tensor's layout as a chain's `TensorSpec`."""
    return TensorSpec.model_validate(
        {
            "shape": [int(n) for n in tensor.shape],
            "dtype": DTYPE_NAMES.get(tensor.dtype, str(tensor.dtype).removeprefix("torch.")),
            "strides": [int(s) for s in tensor.stride()],
            "offset": int(tensor.storage_offset()),
        }
    )


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
